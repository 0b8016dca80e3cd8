// The daemon's log: structured journal entries under systemd, one line on stderr
// otherwise. Thread-safe (the executor's worker thread logs too).
#pragma once

#include <initializer_list>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <utility>

#include "config.h"

namespace cpuhpd::log {

using Level = LogLevel;  // config.h: kLogLevelNames

// Chooses the sink (journal when stderr is connected to it, see JOURNAL_STREAM) and the
// lowest level written.
void init(Level level);

// A structured field: journal name in upper case (CPUS, STRATEGY, DURATION_US, BATCH_ID,
// ACTION, ...); on stderr it is written as lower-case key=value after the message.
using Field = std::pair<std::string_view, std::string>;

void write(Level level, std::string_view message, std::span<const Field> fields);
inline void write(Level level, std::string_view message, std::initializer_list<Field> fields = {}) {
    write(level, message, std::span<const Field>(fields.begin(), fields.size()));
}

inline void debug(std::string_view m, std::initializer_list<Field> f = {}) {
    write(Level::Debug, m, f);
}
inline void info(std::string_view m, std::initializer_list<Field> f = {}) {
    write(Level::Info, m, f);
}
inline void warning(std::string_view m, std::initializer_list<Field> f = {}) {
    write(Level::Warning, m, f);
}
inline void error(std::string_view m, std::initializer_list<Field> f = {}) {
    write(Level::Error, m, f);
}

}  // namespace cpuhpd::log
