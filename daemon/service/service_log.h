// What the service writes to the log about the engine's work: each line's words and
// journal fields in one place. Any thread (log.h is thread-safe).
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "engine.h"

namespace cpuhpd {

void log_notice(const Notice& notice);
// A change's result: its failed CPUs (warnings) and one line for the request.
void log_result(const RequestResult& result);
// A batch's line, and one per cpuset partition it shrank or gave back.
void log_batch(const BatchReport& report);
// What start-up recovery found and did (called only when it found something).
void log_recovery(const RecoveryReport& report);
// The partitions given back at start, and why the ledger was unreadable (`problem`).
void log_settled(const std::vector<PartitionChange>& changes,
                 const std::optional<std::string>& problem);

}  // namespace cpuhpd
