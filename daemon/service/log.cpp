#include "log.h"

#include <sys/stat.h>
#include <sys/uio.h>
#include <syslog.h>
#include <systemd/sd-journal.h>
#include <unistd.h>

#include <atomic>
#include <cctype>
#include <cstdio>
#include <cstdlib>
#include <mutex>
#include <vector>

namespace cpuhpd::log {

namespace {

std::atomic<Level> g_level{Level::Info};
std::atomic<bool> g_journal{false};
std::mutex g_stderr_mutex;

// True when stderr is the journal stream systemd set up for us (JOURNAL_STREAM is
// "DEVICE:INODE" of that stream; a redirected stderr no longer matches), or when we run
// as a systemd service at all (INVOCATION_ID) and stderr is not a terminal.
bool stderr_is_journal() {
    if (const char* stream = std::getenv("JOURNAL_STREAM")) {
        unsigned long long dev = 0;
        unsigned long long ino = 0;
        struct stat st {};
        if (std::sscanf(stream, "%llu:%llu", &dev, &ino) == 2 && fstat(STDERR_FILENO, &st) == 0 &&
            static_cast<unsigned long long>(st.st_dev) == dev &&
            static_cast<unsigned long long>(st.st_ino) == ino) {
            return true;
        }
    }
    return std::getenv("INVOCATION_ID") != nullptr && isatty(STDERR_FILENO) == 0;
}

int priority(Level level) {
    switch (level) {
        case Level::Debug:
            return LOG_DEBUG;
        case Level::Info:
            return LOG_INFO;
        case Level::Warning:
            return LOG_WARNING;
        case Level::Error:
            return LOG_ERR;
    }
    return LOG_INFO;
}

// Values on stderr are quoted when they would not read as one token.
std::string stderr_value(const std::string& value) {
    bool plain = !value.empty();
    for (const char c : value) {
        if (std::isspace(static_cast<unsigned char>(c)) != 0 || c == '"' || c == '=') {
            plain = false;
        }
    }
    if (plain) {
        return value;
    }
    std::string quoted = "\"";
    for (const char c : value) {
        if (c == '"' || c == '\\') {
            quoted += '\\';
        }
        quoted += c == '\n' ? ' ' : c;
    }
    return quoted + "\"";
}

}  // namespace

void init(Level level) {
    g_level = level;
    g_journal = stderr_is_journal();
}

void write(Level level, std::string_view message, std::span<const Field> fields) {
    if (level < g_level.load()) {
        return;
    }
    if (g_journal.load()) {
        std::vector<std::string> entries;
        entries.reserve(fields.size() + 3);
        entries.push_back("MESSAGE=" + std::string(message));
        entries.push_back("PRIORITY=" + std::to_string(priority(level)));
        entries.push_back("SYSLOG_IDENTIFIER=cpuhpd");
        for (const auto& [key, value] : fields) {
            entries.push_back(std::string(key) + "=" + value);
        }
        std::vector<iovec> iov;
        iov.reserve(entries.size());
        for (auto& entry : entries) {
            iov.push_back(iovec{entry.data(), entry.size()});
        }
        if (sd_journal_sendv(iov.data(), static_cast<int>(iov.size())) >= 0) {
            return;
        }
        // The journal socket is gone (e.g. journald restarting): fall back to stderr.
    }
    std::string line = "cpuhpd: ";
    line += name_of(kLogLevelNames, level);
    line += ": ";
    line += message;
    for (const auto& [key, value] : fields) {
        line += ' ';
        for (const char c : key) {
            line += static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
        }
        line += '=';
        line += stderr_value(value);
    }
    line += '\n';
    const std::lock_guard lock(g_stderr_mutex);
    std::fwrite(line.data(), 1, line.size(), stderr);
    std::fflush(stderr);
}

}  // namespace cpuhpd::log
