// A fake /proc holding only what pinned.h reads: threads' stat and status, and IRQs'
// smp_affinity_list with one directory per action.
#pragma once

#include <filesystem>
#include <string>
#include <vector>

namespace cpuhpd::test {

class FakeProc {
public:
    explicit FakeProc(std::filesystem::path root);

    const std::filesystem::path& root() const { return root_; }

    // Thread `tid` of process `pid`, allowed on `cpus` (a cpulist); a kernel thread has
    // PF_KTHREAD in its stat flags.
    void add_task(unsigned pid, unsigned tid, const std::string& comm, const std::string& cpus,
                  bool kernel_thread = false);
    void add_irq(unsigned irq, const std::string& cpus,
                 const std::vector<std::string>& actions = {});

private:
    std::filesystem::path root_;
};

}  // namespace cpuhpd::test
