// The properties of org.cpuhpd1.Manager as the plain Status of model.h: from one GetAll
// (`cpuctl status`) or from the changed ones a PropertiesChanged carries (`cpuctl watch`).
// Each property is read with the type of its generated getter: a property the XML drops or
// retypes breaks the build here.
#pragma once

#include <sdbus-c++/sdbus-c++.h>

#include <map>
#include <string>
#include <vector>

#include "model.h"

namespace cpuctl {

using PropertyMap = std::map<std::string, sdbus::Variant>;

// The property names of `props` that update_status() knows, set in `s`; the others are left
// as they are. Returns the names it set.
std::vector<std::string> update_status(Status& s, const PropertyMap& props);

// The Holds property's entries (also HoldsChanged's argument).
using DbusHolds = std::vector<sdbus::Struct<uint64_t, std::string, std::string, std::string,
                                            std::string, std::string, uint64_t, bool>>;
std::vector<HoldInfo> holds_of(const DbusHolds& holds);

}  // namespace cpuctl
