// The metrics file (config metrics_file): replaces it with new text, atomically (a
// temporary file beside it, fsynced, renamed over it: node_exporter's textfile collector
// reads *.prom only, so it never sees the temporary one, nor half a file). A write that
// fails is logged once, with the path and the errno text, until a write works again; it
// never stops the daemon.
#pragma once

#include <filesystem>
#include <string>

namespace cpuhpd {

class MetricsFile {
public:
    explicit MetricsFile(std::filesystem::path path);

    // Writes `text` unless it is what the file holds already; false when the write failed.
    bool update(const std::string& text);

private:
    std::filesystem::path path_;
    std::string written_;  // the text the file holds (empty: unknown, or not written yet)
    bool failing_ = false;
};

}  // namespace cpuhpd
