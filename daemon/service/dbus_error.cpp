#include "dbus_error.h"

#include "cpulist.h"
#include "input.h"
#include "log.h"
#include "names.h"
#include "option_dictionary.h"

namespace cpuhpd {

namespace {

// Longest error message sent; messages quote input through escape_excerpt() already.
constexpr std::size_t kMaxErrorMessage = 4096;

}  // namespace

sdbus::Error sendable(const std::string& name, const std::string& message) {
    return sdbus::Error(name, escape_excerpt(message, kMaxErrorMessage));
}

sdbus::Error to_dbus_error(const char* what, const std::exception_ptr& thrown) {
    try {
        std::rethrow_exception(thrown);
    } catch (const sdbus::Error& error) {
        return sendable(error.getName(), error.getMessage());
    } catch (const Refusal& refusal) {
        return sendable(error_name(refusal.kind()), refusal.what());
    } catch (const MaskError& error) {
        return sendable(error_name(RefusalKind::InvalidMask),
                        "invalid mask '" + error.token() + "' at position " +
                            std::to_string(error.position()) + ": " + error.reason());
    } catch (const OptionError& error) {
        return sendable(kInvalidArgs, error.what());
    } catch (const std::exception& error) {
        log::error(std::string(what) +
                   " failed: " + escape_excerpt(error.what(), kMaxErrorMessage));
        return sendable(kFailed, error.what());
    } catch (...) {
        log::error(std::string(what) + " failed with an unknown exception");
        return sdbus::Error(kFailed, "internal error");
    }
}

}  // namespace cpuhpd
