// dbus/names.h against dbus/org.cpuhpd1.Manager.xml: the names that the generated glue cannot
// check at build time (errors, dictionary keys, property names for GetAll) are those the
// interface documents.
#include <gtest/gtest.h>

#include <fstream>
#include <sstream>
#include <string>

#include "enums.h"
#include "names.h"

namespace cpuhpd::dbus {
namespace {

std::string interface_xml() {
    std::ifstream in(std::string(CPUHPD_SOURCE_DIR) + "/dbus/org.cpuhpd1.Manager.xml");
    std::stringstream text;
    text << in.rdbuf();
    return text.str();
}

bool mentions(const std::string& xml, const std::string& text) {
    return xml.find(text) != std::string::npos;
}

TEST(DbusNames, MatchTheInterfaceXml) {
    const std::string xml = interface_xml();
    ASSERT_FALSE(xml.empty());
    EXPECT_TRUE(mentions(xml, std::string("<interface name=\"") + kInterface + "\""));
    EXPECT_TRUE(mentions(xml, std::string("<node name=\"") + kObjectPath + "\""));
    for (const auto& [kind, name] : kRefusalNames) {
        EXPECT_TRUE(mentions(xml, error_name(name) + " ")) << name;
    }
    for (const char* error : {kErrorInvalidArgs, kErrorAccessDenied}) {
        EXPECT_TRUE(mentions(xml, error)) << error;
    }
    for (const char* key : {kOptionMode, kOptionStrategy, kOptionDryRun, kOptionRestore,
                            kOptionRefusePinned, kOptionForce}) {
        EXPECT_TRUE(mentions(xml, std::string("\"") + key + "\"")) << key;
    }
    for (const char* key :
         {kSummaryAction, kSummaryMask, kSummaryMode, kSummaryStrategy, kSummaryDryRun,
          kSummaryBatchId, kSummaryDurationUs, kSummaryOrder, kSummaryOutcome, kSummaryPinnedTasks,
          kSummaryPinnedIrqs, kSummaryPartitions, kSummaryPhases, kSummaryQueuedUs}) {
        EXPECT_TRUE(mentions(xml, std::string("\"") + key + "\" ")) << key;
    }
    for (const char* property :
         {kPropertyOnline, kPropertyOffline, kPropertyPossible, kPropertyPresent,
          kPropertyProtected, kPropertySmtControl, kPropertyCapabilities, kPropertyBusy,
          kPropertyLastRecovery, kPropertyHolds, kPropertyCurrentBatch, kPropertyPowerProfiles}) {
        EXPECT_TRUE(mentions(xml, std::string("<property name=\"") + property + "\"")) << property;
    }
    for (const char* key :
         {kBatchId, kBatchAction, kBatchCpus, kBatchRequests, kBatchDone, kBatchTotal, kBatchSince,
          kPowerProfilesFollowed, kPowerProfilesAvailable, kPowerProfilesProfile}) {
        EXPECT_TRUE(mentions(xml, std::string("\"") + key + "\" (")) << key;
    }
}

}  // namespace
}  // namespace cpuhpd::dbus
