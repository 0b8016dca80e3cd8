// Runs test code in a forked child, optionally as another user: a bus connection made there
// is that user's, as the bus verifies it.
#pragma once

#include <sys/types.h>

#include <functional>
#include <string>

namespace cpuhpd::itest {

// What runs in the child: gets `ready`, which it may call once to let the parent run its
// `on_ready` while the child goes on; returns the text the parent gets back.
using ChildBody = std::function<std::string(const std::function<void()>& ready)>;

// Runs `fn` in a forked child (bounded: 30 s, then SIGKILL and "<timeout>" appended);
// returns what it returned (or "<exception: ...>").
std::string in_child(const ChildBody& fn, const std::function<void()>& on_ready = {});

// The same as `uid`/`gid` (no supplementary groups): "<setuid failed>" when that fails.
std::string as_user(uid_t uid, gid_t gid, const ChildBody& fn,
                    const std::function<void()>& on_ready = {});

// uid/gid 65534 and uid/gid 1 (Debian's "daemon", in group "daemon").
inline constexpr uid_t kNobody = 65534;
inline constexpr uid_t kDaemonUser = 1;

}  // namespace cpuhpd::itest
