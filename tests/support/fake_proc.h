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
                  bool kernel_thread = false, unsigned long long start_time = 100);
    // Rewrites the thread's Cpus_allowed_list (as the kernel or sched_setaffinity would).
    void set_task_cpus(unsigned pid, unsigned tid, const std::string& cpus);
    std::string task_cpus(unsigned pid, unsigned tid) const;
    void remove_task(unsigned pid);
    // Rewrites an IRQ's smp_affinity_list; reads it back.
    void set_irq_cpus(unsigned irq, const std::string& cpus);
    std::string irq_cpus(unsigned irq) const;
    void add_irq(unsigned irq, const std::string& cpus,
                 const std::vector<std::string>& actions = {});

private:
    std::filesystem::path root_;
};

}  // namespace cpuhpd::test
