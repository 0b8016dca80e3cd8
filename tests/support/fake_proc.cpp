#include "fake_proc.h"

#include <fstream>
#include <iterator>
#include <stdexcept>

namespace cpuhpd::test {

namespace {

void write(const std::filesystem::path& file, const std::string& text) {
    std::filesystem::create_directories(file.parent_path());
    std::ofstream out(file);
    out << text;
    if (!out) {
        throw std::runtime_error("cannot write " + file.string());
    }
}

}  // namespace

FakeProc::FakeProc(std::filesystem::path root) : root_(std::move(root)) {
    std::filesystem::create_directories(root_ / "irq");
}

void FakeProc::add_task(unsigned pid, unsigned tid, const std::string& comm,
                        const std::string& cpus, bool kernel_thread,
                        unsigned long long start_time) {
    const auto dir = root_ / std::to_string(pid) / "task" / std::to_string(tid);
    // Fields as the kernel prints them (fs/proc/array.c); flags is the 9th.
    const unsigned long flags = kernel_thread ? 0x00208040UL : 0x00400100UL;
    write(dir / "stat", std::to_string(tid) + " (" + comm + ") S 1 " + std::to_string(pid) + " " +
                            std::to_string(pid) + " 0 -1 " + std::to_string(flags) +
                            " 0 0 0 0 0 0 0 0 20 0 1 0 " + std::to_string(start_time) + " 0 0\n");
    write(dir / "status", "Name:\t" + comm + "\nUmask:\t0022\nState:\tS (sleeping)\nTgid:\t" +
                              std::to_string(pid) + "\nPid:\t" + std::to_string(tid) +
                              "\nCpus_allowed:\tffff\nCpus_allowed_list:\t" + cpus +
                              "\nMems_allowed_list:\t0\n");
}

void FakeProc::set_task_cpus(unsigned pid, unsigned tid, const std::string& cpus) {
    const auto file = root_ / std::to_string(pid) / "task" / std::to_string(tid) / "status";
    std::ifstream in(file);
    std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    const std::string key = "Cpus_allowed_list:\t";
    const auto at = text.find(key);
    if (at == std::string::npos) {
        throw std::runtime_error("no task " + std::to_string(tid));
    }
    const auto end = text.find('\n', at);
    text.replace(at + key.size(), end - at - key.size(), cpus);
    write(file, text);
}

std::string FakeProc::task_cpus(unsigned pid, unsigned tid) const {
    std::ifstream in(root_ / std::to_string(pid) / "task" / std::to_string(tid) / "status");
    const std::string key = "Cpus_allowed_list:\t";
    for (std::string line; std::getline(in, line);) {
        if (line.rfind(key, 0) == 0) {
            return line.substr(key.size());
        }
    }
    return "";
}

void FakeProc::remove_task(unsigned pid) {
    std::filesystem::remove_all(root_ / std::to_string(pid));
}

void FakeProc::set_irq_cpus(unsigned irq, const std::string& cpus) {
    write(root_ / "irq" / std::to_string(irq) / "smp_affinity_list", cpus + "\n");
}

std::string FakeProc::irq_cpus(unsigned irq) const {
    std::ifstream in(root_ / "irq" / std::to_string(irq) / "smp_affinity_list");
    std::string line;
    std::getline(in, line);
    return line;
}

void FakeProc::add_irq(unsigned irq, const std::string& cpus,
                       const std::vector<std::string>& actions) {
    const auto dir = root_ / "irq" / std::to_string(irq);
    write(dir / "smp_affinity_list", cpus + "\n");
    for (const auto& action : actions) {
        std::filesystem::create_directories(dir / action);
    }
}

}  // namespace cpuhpd::test
