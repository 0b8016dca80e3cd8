// `cpuctl offline|online MASK`, `cpuctl plan ACTION MASK` and `cpuctl smt on|off`: the
// commands that change CPUs (or show what a change would do) through Offline, Online and
// SetSmt; with -- COMMAND, offline and online hold the CPUs while COMMAND runs
// (hold_command.h).
#pragma once

#include <CLI/CLI.hpp>
#include <string>
#include <vector>

#include "daemon_client.h"

namespace cpuctl {

inline constexpr const char* kMaskHelp = R"(MASK (several are a union):
  4-7             a kernel cpulist: ranges and single CPUs
  4,6,7           a list
  0-31:2/8        group form: from 0-31, the first 2 of every 8 (0,1,8,9,16,17,24,25)
  0xff            a hex cpumap (commas allowed: 0xff,00000000)
  package:1       every CPU of package 1 (also die:N, node:N)
  core:4          the SMT threads of CPU 4's core
  smt             every SMT thread that is not the first of its core
  all             every present CPU; going offline, the protected ones and those
                  without an online file are left out)";

inline constexpr const char* kBatchExamples = R"(
With -- COMMAND [ARGS...], the CPUs are held while COMMAND runs (no other caller
may change them), then restored; cpuctl exits with COMMAND's status (128+N if
signal N killed it). SIGINT/SIGTERM/SIGHUP go to COMMAND; the restore follows.

Examples:
  cpuctl offline 4,6,7
  cpuctl offline package:1 -- ./live-update.sh --stage 2
  cpuctl offline package:1 --best-effort
  cpuctl offline 0-31:2/8 --strategy per-cpu
  cpuctl online all
  cpuctl --json online node:0 0xff)";

// The commands are null when not built (main.cpp builds only the command named): parsed.h.
struct ChangeCommand {
    CLI::App* offline = nullptr;
    CLI::App* online = nullptr;
    CLI::App* plan = nullptr;
    CLI::App* smt = nullptr;
    std::vector<std::string> masks;
    std::string plan_action;
    std::string smt_state;
    bool best_effort = false;
    std::string strategy;
    bool dry_run = false;
    bool refuse_pinned = false;
    bool force = false;
    // offline/online MASK -- COMMAND: hold the CPUs while COMMAND runs.
    std::vector<std::string> command;
    std::string who = "cpuctl";
    std::string why;
    bool no_restore = false;
};

// Adds offline, online and plan to `app` (add_smt_command: smt, later in the command list);
// `c` must outlive the parse.
void add_change_commands(CLI::App& app, ChangeCommand& c);
void add_smt_command(CLI::App& app, ChangeCommand& c);
// After the parse: what the command line may not combine (-- COMMAND with a dry run, ...).
// Throws CLI::ValidationError.
void check_change_command(const ChangeCommand& c);
// Then -- COMMAND with --json, and a "--" with no command after it (`nothing_after_dashes`).
void check_command_after_dashes(const ChangeCommand& c, bool json, bool nothing_after_dashes);
// Runs the parsed command; returns the exit status (exit_codes.h). Throws DaemonError.
int run_change_command(DaemonClient& client, const ChangeCommand& c, bool json);

}  // namespace cpuctl
