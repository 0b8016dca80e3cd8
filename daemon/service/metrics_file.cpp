#include "metrics_file.h"

#include <utility>

#include "log.h"
#include "state_file.h"
#include "sysfs.h"

namespace cpuhpd {

MetricsFile::MetricsFile(std::filesystem::path path) : path_(std::move(path)) {}

bool MetricsFile::update(const std::string& text) {
    if (!written_.empty() && text == written_) {
        return true;
    }
    std::string step;
    if (const int err = replace_file(path_, text, step); err != 0) {
        if (!failing_) {
            log::warning("cannot write the metrics file " + path_.string() + " (" + step +
                             "): " + errno_text(err) + "; trying again at the next change",
                         {{"METRICS_FILE", path_.string()}, {"ERRNO", errno_name(err)}});
            failing_ = true;
        }
        written_.clear();
        return false;
    }
    if (failing_) {
        log::info("writing the metrics file " + path_.string() + " again",
                  {{"METRICS_FILE", path_.string()}});
        failing_ = false;
    }
    written_ = text;
    return true;
}

}  // namespace cpuhpd
