// The YAML config loader: defaults, every key, and an error with file, line and key for
// each kind of bad input.
#include "config.h"

#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <string>

#include "input.h"

namespace cpuhpd {
namespace {

std::string error_of(const std::string& text) {
    try {
        parse_config(text, "test.yaml");
    } catch (const ConfigError& error) {
        return error.what();
    }
    return "no error";
}

TEST(Config, EmptyTextGivesDefaults) {
    const Config config = parse_config("# only a comment\n", "test.yaml");
    EXPECT_EQ(config.sysfs_root, "/sys");
    EXPECT_EQ(config.bus, "system");
    EXPECT_EQ(config.state_dir, "/run/cpuhpd");
    EXPECT_EQ(config.log_level, "info");
    EXPECT_EQ(config.engine.protected_cpus, CpuSet::single(0));
    EXPECT_EQ(config.engine.min_online, 1u);
    EXPECT_EQ(config.engine.coalesce, std::chrono::milliseconds(0));
    EXPECT_EQ(config.engine.expedite, Expedite::Auto);
    EXPECT_EQ(config.engine.default_mode, Mode::Atomic);
    EXPECT_EQ(config.engine.max_queued_requests, 256u);
    EXPECT_EQ(config.on_stop, StopPolicy::Cancel);
    EXPECT_TRUE(config.profiles.empty());
    EXPECT_TRUE(config.metrics_file.empty());  // no metrics written
}

TEST(Config, EveryKey) {
    const Config config = parse_config(R"(
sysfs_root: /tmp/fake
bus: unix:path=/tmp/bus
state_dir: /tmp/state
log_level: debug
protected_cpus: 0-1,8
min_online: 2
coalesce_ms: 5
expedite: never
default_mode: best-effort
max_queued_requests: 16
hold_grace_s: 5
enforce_holds: report
on_stop: finish
metrics_file: /var/lib/prometheus/node-exporter/./cpuhpd.prom
profiles:
  night:
    offline: "package:1"
  lean: {offline: "4-7", smt: off, min_online_per_node: 2}
  nosmt:
    smt: off
)",
                                       "test.yaml");
    EXPECT_EQ(config.sysfs_root, "/tmp/fake");
    EXPECT_EQ(config.bus, "unix:path=/tmp/bus");
    EXPECT_EQ(config.state_dir, "/tmp/state");
    EXPECT_EQ(config.log_level, "debug");
    EXPECT_EQ(config.engine.protected_cpus, CpuSet::from({0, 1, 8}));
    EXPECT_EQ(config.engine.min_online, 2u);
    EXPECT_EQ(config.engine.coalesce, std::chrono::milliseconds(5));
    EXPECT_EQ(config.engine.expedite, Expedite::Never);
    EXPECT_EQ(config.engine.default_mode, Mode::BestEffort);
    EXPECT_EQ(config.engine.max_queued_requests, 16u);
    EXPECT_EQ(config.engine.hold_grace, std::chrono::seconds(5));
    EXPECT_EQ(config.engine.enforce_holds, EnforceHolds::Report);
    EXPECT_EQ(config.on_stop, StopPolicy::Finish);
    EXPECT_EQ(config.metrics_file, "/var/lib/prometheus/node-exporter/cpuhpd.prom");
    ASSERT_EQ(config.profiles.size(), 3u);
    EXPECT_EQ(config.profiles.at("night").offline, "package:1");
    EXPECT_FALSE(config.profiles.at("night").smt_off);
    EXPECT_EQ(config.profiles.at("night").min_online_per_node, 0u);
    EXPECT_EQ(config.profiles.at("lean").offline, "4-7");
    EXPECT_TRUE(config.profiles.at("lean").smt_off);
    EXPECT_EQ(config.profiles.at("lean").min_online_per_node, 2u);
    EXPECT_EQ(config.profiles.at("nosmt").offline, "");
    EXPECT_TRUE(config.profiles.at("nosmt").smt_off);
}

TEST(Config, ProtectedCpusMayBeEmptyOrANumber) {
    EXPECT_TRUE(parse_config("protected_cpus: \"\"\n", "t").engine.protected_cpus.empty());
    EXPECT_TRUE(parse_config("protected_cpus:\n", "t").engine.protected_cpus.empty());
    EXPECT_EQ(parse_config("protected_cpus: 3\n", "t").engine.protected_cpus, CpuSet::single(3));
}

TEST(Config, UnknownKeyNamesFileLineAndKey) {
    const std::string error = error_of("min_online: 1\n\nfrobnicate: yes\n");
    EXPECT_EQ(error.rfind("test.yaml:3: key 'frobnicate': unknown key", 0), 0u) << error;
}

TEST(Config, BadValues) {
    struct Case {
        const char* text;
        const char* prefix;
    };
    const Case cases[] = {
        {"min_online: 0\n", "test.yaml:1: key 'min_online': '0' is out of range"},
        {"min_online: two\n", "test.yaml:1: key 'min_online': 'two' is not an integer"},
        {"min_online: 1.5\n", "test.yaml:1: key 'min_online': '1.5' is not an integer"},
        {"min_online:\n", "test.yaml:1: key 'min_online': a value is required"},
        {"\ncoalesce_ms: 10001\n",
         "test.yaml:2: key 'coalesce_ms': '10001' is out of range 0..10000"},
        {"coalesce_ms: -1\n", "test.yaml:1: key 'coalesce_ms': '-1' is out of range"},
        {"coalesce_ms: [1, 2]\n", "test.yaml:1: key 'coalesce_ms': expected a single value"},
        {"expedite: sometimes\n",
         "test.yaml:1: key 'expedite': 'sometimes' is not one of auto, always, never"},
        {"default_mode: careful\n",
         "test.yaml:1: key 'default_mode': 'careful' is not one of atomic, best-effort"},
        {"log_level: loud\n", "test.yaml:1: key 'log_level': 'loud' is not one of"},
        {"on_stop: wait\n", "test.yaml:1: key 'on_stop': 'wait' is not one of cancel, finish"},
        {"hold_grace_s: 0\n", "test.yaml:1: key 'hold_grace_s': '0' is out of range 1..86400"},
        {"\nhold_grace_s: 86401\n",
         "test.yaml:2: key 'hold_grace_s': '86401' is out of range 1..86400"},
        {"hold_grace_s: soon\n", "test.yaml:1: key 'hold_grace_s': 'soon' is not an integer"},
        {"enforce_holds: fight\n",
         "test.yaml:1: key 'enforce_holds': 'fight' is not one of restore, report"},
        {"protected_cpus: 5-1\n",
         "test.yaml:1: key 'protected_cpus': invalid cpulist '5-1' at position"},
        {"protected_cpus: abc\n", "test.yaml:1: key 'protected_cpus': invalid cpulist 'abc'"},
        {"max_queued_requests: 0\n", "test.yaml:1: key 'max_queued_requests': '0' is out of range"},
        {"sysfs_root: relative/path\n",
         "test.yaml:1: key 'sysfs_root': 'relative/path' is not an absolute path"},
        {"state_dir: \"\"\n", "test.yaml:1: key 'state_dir': must not be empty"},
        {"metrics_file: cpuhpd.prom\n",
         "test.yaml:1: key 'metrics_file': 'cpuhpd.prom' is not an absolute path"},
        {"metrics_file: \"\"\n", "test.yaml:1: key 'metrics_file': must not be empty"},
        {"\nmetrics_file: /var/lib/prometheus/node-exporter/\n",
         "test.yaml:2: key 'metrics_file': '/var/lib/prometheus/node-exporter/' is a directory; "
         "name a file in it"},
        {"metrics_file: /tmp/.\n", "test.yaml:1: key 'metrics_file': '/tmp/.' is a directory"},
        {"metrics_file: /tmp\n", "test.yaml:1: key 'metrics_file': '/tmp' is a directory"},
        {"bus: \"\"\n", "test.yaml:1: key 'bus': must not be empty"},
        {"bus: system\nbus: session\n", "test.yaml:2: key 'bus': duplicate key"},
        {"profiles: night\n", "test.yaml:1: key 'profiles': expected a mapping"},
        {"profiles:\n  night:\n    offline: \"1\"\n    sideways: \"2\"\n",
         "test.yaml:4: key 'profiles.night.sideways': unknown key"},
        {"profiles:\n  night: {}\n", "test.yaml:2: key 'profiles.night': a profile needs"},
        {"profiles:\n  day:\n    online: \"1\"\n",
         "test.yaml:3: key 'profiles.day.online': unknown key"},
        {"profiles:\n  night:\n    smt: sideways\n",
         "test.yaml:3: key 'profiles.night.smt': 'sideways' is not on or off"},
        {"profiles:\n  night:\n    offline: \"4\"\n    min_online_per_node: -1\n",
         "test.yaml:4: key 'profiles.night.min_online_per_node'"},
        {"profiles:\n  night:\n    offline: \"4-\"\n",
         "test.yaml:3: key 'profiles.night.offline': invalid mask"},
        {"profiles:\n  \"bad name\":\n    offline: \"1\"\n",
         "test.yaml:2: key 'profiles': profile names"},
        {"- a\n- b\n", "test.yaml:1: the document must be a mapping"},
    };
    for (const auto& c : cases) {
        const std::string error = error_of(c.text);
        EXPECT_EQ(error.rfind(c.prefix, 0), 0u) << "input:\n" << c.text << "error: " << error;
    }
}

TEST(Config, SyntaxErrorGivesTheParserLine) {
    const std::string error = error_of("min_online: 1\ncoalesce_ms: 5\nprofiles: [unclosed\n");
    EXPECT_NE(error.find("test.yaml:"), std::string::npos) << error;
    EXPECT_NE(error.find("YAML syntax error"), std::string::npos) << error;
    EXPECT_EQ(error.find("key '"), std::string::npos) << error;
    const std::string error2 = error_of("a: b\n  c: d\n");
    EXPECT_EQ(error2.rfind("test.yaml:2: YAML syntax error", 0), 0u) << error2;
}

class ConfigFile : public ::testing::Test {
protected:
    void SetUp() override {
        dir_ = std::filesystem::temp_directory_path() /
               ("cpuhpd-config-test-" + std::to_string(::getpid()));
        std::filesystem::create_directories(dir_);
    }
    void TearDown() override { std::filesystem::remove_all(dir_); }
    std::filesystem::path dir_;
};

TEST_F(ConfigFile, LoadsAFile) {
    const auto file = dir_ / "cpuhpd.yaml";
    std::ofstream(file) << "min_online: 3\n";
    EXPECT_EQ(load_config(file).engine.min_online, 3u);
}

TEST_F(ConfigFile, ErrorsNameTheFile) {
    const auto file = dir_ / "cpuhpd.yaml";
    std::ofstream(file) << "min_online: 3\nnope: 1\n";
    try {
        load_config(file);
        FAIL() << "no error";
    } catch (const ConfigError& error) {
        EXPECT_EQ(std::string(error.what()),
                  file.string() +
                      ":2: key 'nope': unknown key (known: sysfs_root, "
                      "proc_root, cgroup_root, bus, state_dir, log_level, protected_cpus, "
                      "min_online, coalesce_ms, expedite, default_mode, "
                      "max_queued_requests, recovery, hold_grace_s, enforce_holds, on_stop, "
                      "metrics_file, profiles, power_profiles)");
    }
}

TEST_F(ConfigFile, AMetricsFileThatIsADirectoryNamesTheKeyAndTheFile) {
    const auto file = dir_ / "cpuhpd.yaml";
    std::ofstream(file) << "min_online: 3\nmetrics_file: " << dir_.string() << "\n";
    try {
        load_config(file);
        FAIL() << "no error";
    } catch (const ConfigError& error) {
        EXPECT_EQ(std::string(error.what()), file.string() + ":2: key 'metrics_file': '" +
                                                 dir_.string() +
                                                 "' is a directory; name a file in it");
    }
}

TEST_F(ConfigFile, MissingFile) {
    const auto file = dir_ / "absent.yaml";
    EXPECT_THROW(load_config(file), ConfigError);
    EXPECT_THROW(load_config(file, false), ConfigError);
    const Config config = load_config(file, true);
    EXPECT_EQ(config.engine.min_online, 1u);
    try {
        load_config(file);
    } catch (const ConfigError& error) {
        EXPECT_EQ(std::string(error.what()), file.string() + ": no such file");
    }
}

TEST_F(ConfigFile, DirectoryIsAnErrorEvenWhenMissingIsOk) {
    EXPECT_THROW(load_config(dir_, true), ConfigError);
}

// Issue 9: a FIFO as the config hung start-up and --check-config; a link to /dev/zero or
// a huge file was read whole. Only a regular file of at most 1 MiB is read.
TEST_F(ConfigFile, OnlyARegularFileOfBoundedSizeIsRead) {
    const auto fifo = dir_ / "fifo.yaml";
    ASSERT_EQ(::mkfifo(fifo.c_str(), 0600), 0);
    try {
        load_config(fifo);
        FAIL() << "no error";
    } catch (const ConfigError& error) {
        EXPECT_EQ(std::string(error.what()),
                  fifo.string() + ": is not a regular file (a FIFO, socket or device)");
    }
    const auto zero = dir_ / "zero.yaml";
    std::filesystem::create_symlink("/dev/zero", zero);
    EXPECT_THROW(load_config(zero), ConfigError);
    const auto big = dir_ / "big.yaml";
    std::ofstream(big) << "# " << std::string(kMaxConfigBytes, 'x') << "\nmin_online: 2\n";
    try {
        load_config(big);
        FAIL() << "no error";
    } catch (const ConfigError& error) {
        EXPECT_NE(std::string(error.what()).find("the limit is 1 MiB"), std::string::npos)
            << error.what();
    }
    // A link to a regular file is followed (configuration management installs those).
    const auto real = dir_ / "real.yaml";
    std::ofstream(real) << "min_online: 2\n";
    const auto link = dir_ / "link.yaml";
    std::filesystem::create_symlink(real, link);
    EXPECT_EQ(load_config(link).engine.min_online, 2u);
}

// Issue 9: yaml-cpp's Load() read the first document and dropped the rest silently.
TEST(Config, ASecondDocumentIsRefusedWithItsLine) {
    EXPECT_EQ(error_of("min_online: 2\n---\nmin_online: 3\n"),
              "test.yaml:2: a second YAML document ('---'): the config is one document");
    EXPECT_EQ(error_of("---\n# first\nmin_online: 2\n\n---\n"),
              "test.yaml:5: a second YAML document ('---'): the config is one document");
    EXPECT_EQ(parse_config("---\nmin_online: 2\n", "test.yaml").engine.min_online, 2u);
}

// Found by fuzzing: on ",\"" yaml-cpp 0.7's LoadAll() never returns (memory grows) and
// Load() reads a null document, i.e. all defaults. Refused as a syntax error.
TEST(Config, TextTheYamlParserCannotReadIsRefused) {
    EXPECT_EQ(error_of(",\"\n"),
              "test.yaml:1: YAML syntax error: text the YAML parser cannot read");
    EXPECT_EQ(error_of(",s0sfs*_root: /syro@$:ed_cp\"\n"),
              "test.yaml:1: YAML syntax error: text the YAML parser cannot read");
}

// Issue 9: the config file says profile masks are checked; "zzz" passed.
TEST(Config, ProfileMasksAreCheckedAtLoad) {
    EXPECT_EQ(error_of("profiles:\n  night:\n    offline: zzz\n"),
              "test.yaml:3: key 'profiles.night.offline': invalid mask 'zzz' at position 0: "
              "unknown selector 'zzz' (expected all, smt, package:N, die:N, node:N, core:N)");
    EXPECT_EQ(error_of("profiles:\n  day:\n    offline: \"1-\"\n"),
              "test.yaml:3: key 'profiles.day.offline': invalid mask '1-' at position 0: invalid "
              "cpulist region '1-': expected a CPU number after '-', found the end of the region");
    const Config ok = parse_config(
        "profiles:\n  night:\n    offline: \"package:1 0-3,8\"\n    smt: \"off\"\n", "test.yaml");
    EXPECT_EQ(ok.profiles.at("night").offline, "package:1 0-3,8");
}

// Issue 15: power_profiles maps power-profiles-daemon's profiles to profiles or none.
TEST(Config, PowerProfiles) {
    const Config config = parse_config(R"(
power_profiles:
  power-saver: evacuate
  balanced: none
  performance: none
profiles:
  evacuate:
    offline: "package:1"
)",
                                       "test.yaml");
    const std::map<std::string, std::string> expected{
        {"power-saver", "evacuate"}, {"balanced", ""}, {"performance", ""}};
    EXPECT_EQ(config.power_profiles, expected);
    EXPECT_TRUE(parse_config("power_profiles: {}\n", "test.yaml").power_profiles.empty());
    EXPECT_TRUE(parse_config("power_profiles:\n", "test.yaml").power_profiles.empty());
    EXPECT_TRUE(parse_config("min_online: 1\n", "test.yaml").power_profiles.empty());
    // Any non-empty ppd profile name is accepted (a later ppd may offer more).
    EXPECT_EQ(parse_config("power_profiles:\n  quiet: none\n", "test.yaml").power_profiles.size(),
              1u);

    EXPECT_EQ(error_of("profiles:\n  evacuate:\n    offline: \"4\"\n  lean:\n    offline: \"5\"\n"
                       "power_profiles:\n  power-saver: evacuat\n"),
              "test.yaml:7: key 'power_profiles.power-saver': no profile 'evacuat' in 'profiles' "
              "(known: none, evacuate, lean)");
    EXPECT_EQ(error_of("power_profiles:\n  balanced: evacuate\n"),
              "test.yaml:2: key 'power_profiles.balanced': no profile 'evacuate' in 'profiles' "
              "(known: none)");
    EXPECT_EQ(error_of("power_profiles: evacuate\n"),
              "test.yaml:1: key 'power_profiles': expected a mapping of power-profiles-daemon "
              "profiles (power-saver, balanced, performance) to profile names or none");
    EXPECT_EQ(error_of("power_profiles:\n  balanced:\n"),
              "test.yaml:2: key 'power_profiles.balanced': a value is required");
    EXPECT_EQ(error_of("power_profiles:\n  balanced: [none]\n"),
              "test.yaml:2: key 'power_profiles.balanced': expected a single value, not a list "
              "or mapping");
    EXPECT_EQ(error_of("power_profiles:\n  \"\": none\n"),
              "test.yaml:2: key 'power_profiles': expected a power-profiles-daemon profile name");
    EXPECT_EQ(error_of("power_profiles:\n  balanced: none\n  balanced: none\n"),
              "test.yaml:3: key 'power_profiles.balanced': duplicate power profile");
}

// Issue 9: "sysfs_root: /sys/" compared unequal to /sys and turned uevents off silently.
TEST(Config, DirectoriesAreNormalised) {
    EXPECT_EQ(parse_config("sysfs_root: /sys/\n", "test.yaml").sysfs_root, "/sys");
    EXPECT_EQ(parse_config("sysfs_root: /sys/./\n", "test.yaml").sysfs_root, "/sys");
    EXPECT_EQ(parse_config("state_dir: /run//cpuhpd/\n", "test.yaml").state_dir, "/run/cpuhpd");
    EXPECT_EQ(parse_config("sysfs_root: /\n", "test.yaml").sysfs_root, "/");
    EXPECT_EQ(normalize_directory("/sys/"), "/sys");
}

TEST(Config, ShippedDefaultFileParses) {
    // The source tree from the build, not from __FILE__: Debian's build flags
    // (-ffile-prefix-map) make __FILE__ relative to a directory the tests do not run in.
    const Config config =
        load_config(std::filesystem::path(CPUHPD_SOURCE_DIR) / "config/cpuhpd.yaml");
    EXPECT_EQ(config.engine.min_online, 1u);
    EXPECT_TRUE(config.profiles.empty());
}

}  // namespace
}  // namespace cpuhpd
