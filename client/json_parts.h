// The pieces of cpuctl's JSON that several outputs share (render_json.cpp, render_watch.cpp);
// internal to cpuctl_core.
#pragma once

#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "model.h"

namespace cpuctl {

using Json = nlohmann::ordered_json;  // keeps the key order of docs/interface.md

// One line. Strings come from the daemon and the kernel: invalid UTF-8 is replaced, never
// aborts the output.
std::string dump(const Json& j);
// [{"hold_id","cpus","state","who","why","holder","since_us","restore"}, ...]
// status_json()'s object.
Json status_object(const Status& status);
Json holds_array(const std::vector<HoldInfo>& holds);
Json hold_object(const HoldInfo& hold);
// {"followed","available","profile"}
Json power_profiles_object(const PowerProfilesInfo& power);
// {"batch_id","action","cpus","requests","done","total","since_us"}; null when none runs.
Json batch_object(const BatchInFlight& batch);

}  // namespace cpuctl
