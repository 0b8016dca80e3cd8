// --json output of cpuctl: exactly the shapes of docs/interface.md, one object per line.
#pragma once

#include <string>
#include <vector>

#include "model.h"

namespace cpuctl {

std::string batchJson(const BatchReply& reply);
std::string statusJson(const Status& status);
std::string topologyJson(const std::vector<TopologyCpu>& cpus);
// {"error":"org.cpuhpd1.Error.InvalidMask","message":"..."}
std::string errorJson(const ErrorInfo& error);

}  // namespace cpuctl
