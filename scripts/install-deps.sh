#!/usr/bin/env bash
# Installs every Debian package that building (scdoc: the man pages), testing (polkitd: the
# authorization tests run a real one on their private bus; power-profiles-daemon: the power
# profile tests run the real one there; zsh: the zsh completion's test; python3-gi: the
# Python client example of docs/clients.md, run by the integration tests; libglib2.0-bin:
# gdbus monitor, an outside client following the daemon's signals in the integration
# tests; tmux: `cpuctl topology --map` checked in an 80-column pane), the guest demo and the
# benchmark (scripts/bench.sh: matplotlib for its plots, util-linux chcpu as a peer), the
# systemd guest (mmdebstrap: its Debian root) and the Cockpit page's browser test
# (cockpit-ws and cockpit-bridge serve the page, cockpit-system's shell frames it, headless
# chromium driven by chromium-driver through python3-selenium; prometheus: its promtool
# checks the metrics file in the integration tests; stress-ng: the guest's outside
# stressor, stress-ng --cpu-online in the lockdep-stress scenario; gojq: the guests read
# cpuctl's JSON with it, jq 1.6 takes 0.5 s to start there; ccache: scripts/test.sh
# compiles through it, so a run after an earlier one compiles only what changed) need.
# Idempotent: packages already present are left alone.
set -euo pipefail
pkgs=(
  build-essential cmake ninja-build pkg-config clang-format scdoc ccache
  clang libclang-rt-14-dev
  libsdbus-c++-dev libsdbus-c++-bin libsystemd-dev libnl-3-dev libyaml-cpp-dev
  libcli11-dev libgtest-dev libgmock-dev nlohmann-json3-dev
  dbus systemd zsh python3-gi libglib2.0-bin polkitd power-profiles-daemon tmux
  qemu-system-x86 qemu-utils busybox-static cpio xz-utils jq gojq socat mmdebstrap
  linux-source-6.1 linux-source-6.12 bc flex bison libelf-dev libssl-dev python3
  python3-matplotlib python3-numpy util-linux stress-ng
  cockpit-ws cockpit-bridge cockpit-system chromium chromium-driver python3-selenium
  prometheus
)
missing=()
for p in "${pkgs[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if [ ${#missing[@]} -gt 0 ]; then
  echo "install-deps: installing ${missing[*]}" >&2
  export DEBIAN_FRONTEND=noninteractive
  apt-get update -qq
  apt-get install -y -qq --no-install-recommends "${missing[@]}"
fi
