// Arbitrary message bodies fed to every handler's decoding layer, without a bus: the
// decoders of the signals the daemon receives (NameOwnerChanged, power-profiles-daemon's
// PropertiesChanged), the sender check, and the option dictionaries of every changing method
// as the adaptor reads them from the message (Offline/Online/SetSmt, HoldCpus, ApplyProfile,
// RevertProfile). Each must decode, or refuse with OptionError or sdbus::Error (which the
// handlers catch); anything else escaping, a crash or a sanitizer report is a finding.
//
// The input is a program that builds the body: one byte picks what to append next
// (a string, integers, a boolean, an a{sv} dictionary, an array of strings, a variant), and the
// bytes after it give its contents. Every body is one dbus-daemon could deliver (strings are
// made valid UTF-8): a failure to build or seal one is the harness's, never a finding.
#include <sdbus-c++/sdbus-c++.h>

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <string>

#include "bus_signals.h"
#include "option_decoding.h"
#include "printable.h"

namespace sdbus {
// Exported by libsdbus-c++ 1.2 for messages without a connection (its own tests use it), and
// declared in its public Message.h from 1.3 on.
PlainMessage createPlainMessage();
}  // namespace sdbus

namespace {

class Input {
public:
    Input(const std::uint8_t* data, std::size_t size) : data_(data), size_(size) {}
    bool empty() const { return pos_ >= size_; }
    std::uint8_t byte() { return empty() ? 0 : data_[pos_++]; }
    // A string the bus could carry: UTF-8 without NUL (other bytes become '?'), as
    // dbus-daemon only delivers valid messages; the content is what the decoders meet.
    std::string text() {
        const std::size_t n = std::min<std::size_t>(byte(), size_ - std::min(pos_, size_));
        std::string out(reinterpret_cast<const char*>(data_ + pos_), n);
        for (char& c : out) {
            if (c == '\0' || static_cast<unsigned char>(c) >= 0x80) {
                c = '?';
            }
        }
        pos_ += n;
        return out;
    }
    template <typename T>
    T number() {
        T value{};
        for (std::size_t i = 0; i < sizeof(T); ++i) {
            value = static_cast<T>((value << 8) | byte());
        }
        return value;
    }

private:
    const std::uint8_t* data_;
    std::size_t size_;
    std::size_t pos_ = 0;
};

// A variant of one of the types the option decoders meet (and some they refuse).
sdbus::Variant variant_of(Input& in) {
    switch (in.byte() % 4) {
        case 0:
            return sdbus::Variant(in.text());
        case 1:
            return sdbus::Variant(static_cast<bool>(in.byte() & 1));
        case 2:
            return sdbus::Variant(in.number<std::uint32_t>());
        default:
            return sdbus::Variant(std::vector<std::string>{in.text(), in.text()});
    }
}

// Appends what `in` says.
void append_one(sdbus::Message& m, Input& in) {
    switch (in.byte() % 7) {
        case 0:
            m << in.text();
            break;
        case 1:
            m << in.number<std::uint32_t>();
            break;
        case 2:
            m << static_cast<bool>(in.byte() & 1);
            break;
        case 3:
            m << in.number<std::uint64_t>();
            break;
        case 4: {
            std::map<std::string, sdbus::Variant> dict;
            for (int n = in.byte() % 20; n > 0 && !in.empty(); --n) {
                dict.emplace(in.text(), variant_of(in));
            }
            m << dict;
            break;
        }
        case 5: {
            std::vector<std::string> strings;
            for (int n = in.byte() % 8; n > 0 && !in.empty(); --n) {
                strings.push_back(in.text());
            }
            m << strings;
            break;
        }
        default:
            m << variant_of(in);
            break;
    }
}

template <typename F>
void decode(sdbus::Message& m, F decoder) {
    m.rewind(true);
    try {
        decoder();
    } catch (const cpuhpd::OptionError& e) {
        cpuhpd::fuzz::check_printable(e.what());
    } catch (const sdbus::Error&) {
        // refused: the handlers catch it and answer with an error or drop the signal
    }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
    Input in(data, size);
    const std::string sender = in.text();
    auto message = sdbus::createPlainMessage();
    for (int items = 0; items < 16 && !in.empty(); ++items) {
        append_one(message, in);
    }
    message.seal();
    const std::map<std::string, sdbus::Variant> none;
    decode(message, [&] { (void)cpuhpd::decode_name_owner_changed(message); });
    decode(message, [&] {
        (void)cpuhpd::decode_string_property_change(message, "net.hadess.PowerProfiles",
                                                    "ActiveProfile");
    });
    decode(message, [&] { (void)cpuhpd::read_request_options(&message, none); });
    decode(message, [&] { (void)cpuhpd::read_hold_options(&message, none); });
    decode(message, [&] { (void)cpuhpd::read_profile_options(&message, none, 1); });
    decode(message, [&] { (void)cpuhpd::read_profile_options(&message, none, 0); });
    for (const std::string& expected :
         {std::string(cpuhpd::kBusDriver), std::string(":1.7"), std::string()}) {
        const std::string why = cpuhpd::refuse_sender(sender, expected);
        if (!why.empty()) {
            cpuhpd::fuzz::check_printable(why);
        }
    }
    return 0;
}
