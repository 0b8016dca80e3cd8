#include "journal_file.h"

#include <fcntl.h>
#include <time.h>
#include <unistd.h>

#include <cerrno>
#include <charconv>
#include <cstdio>
#include <cstring>
#include <map>
#include <sstream>
#include <utility>

#include "cpulist.h"
#include "input.h"

namespace cpuhpd {

namespace {

constexpr const char* kMagic = "cpuhpd-batch-journal 1";

std::uint64_t fnv1a64(std::string_view text) {
    std::uint64_t hash = 0xcbf29ce484222325ULL;
    for (const unsigned char c : text) {
        hash ^= c;
        hash *= 0x100000001b3ULL;
    }
    return hash;
}

std::string sum_of(std::string_view text) {
    char buf[17];
    std::snprintf(buf, sizeof buf, "%016llx", static_cast<unsigned long long>(fnv1a64(text)));
    return buf;
}

// A line with its checksum and newline.
std::string sealed(const std::string& body) {
    return body + " sum=" + sum_of(body) + "\n";
}

// Values never contain a space, '=' or a byte outside printable ASCII: such bytes are %XX.
std::string encode(std::string_view value) {
    std::string out;
    for (const unsigned char c : value) {
        if (c > 0x20 && c < 0x7f && c != '%' && c != '=') {
            out += static_cast<char>(c);
        } else {
            char buf[4];
            std::snprintf(buf, sizeof buf, "%%%02X", c);
            out += buf;
        }
    }
    return out;
}

std::optional<std::string> decode(std::string_view value) {
    std::string out;
    for (std::size_t i = 0; i < value.size(); ++i) {
        if (value[i] != '%') {
            out += value[i];
            continue;
        }
        unsigned byte = 0;
        if (i + 2 >= value.size() ||
            std::from_chars(value.data() + i + 1, value.data() + i + 3, byte, 16).ptr !=
                value.data() + i + 3) {
            return std::nullopt;
        }
        out += static_cast<char>(byte);
        i += 2;
    }
    return out;
}

std::string order_text(const std::vector<unsigned>& order) {
    std::string out;
    for (const unsigned cpu : order) {
        out += (out.empty() ? "" : ",") + std::to_string(cpu);
    }
    return out.empty() ? "-" : out;
}

std::string cpus_text(const CpuSet& cpus) {
    return cpus.empty() ? "-" : format_cpulist(cpus);
}

std::string optional_text(const std::optional<std::string>& value) {
    return value ? encode(*value) : "-";
}

int write_all(int fd, const std::string& text) {
    const char* p = text.data();
    std::size_t left = text.size();
    while (left > 0) {
        const ssize_t n = ::write(fd, p, left);
        if (n < 0 && errno == EINTR) {
            continue;
        }
        if (n < 0) {
            return errno;
        }
        p += n;
        left -= static_cast<std::size_t>(n);
    }
    return 0;
}

int fsync_dir(const std::filesystem::path& dir) {
    const int fd = ::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (fd < 0) {
        return errno;
    }
    const int err = ::fsync(fd) == 0 ? 0 : errno;
    ::close(fd);
    return err;
}

// ------------------------------------------------------------------ parsing

struct Line {
    std::string kind;
    std::map<std::string, std::string> fields;
};

class ParseError : public std::runtime_error {
    using std::runtime_error::runtime_error;
};

// One sealed line (without its newline); nullopt when the sum does not match.
std::optional<Line> unseal(std::string_view line) {
    const std::size_t at = line.rfind(" sum=");
    if (at == std::string_view::npos || line.substr(at + 5) != sum_of(line.substr(0, at))) {
        return std::nullopt;
    }
    Line out;
    std::istringstream words{std::string(line.substr(0, at))};
    words >> out.kind;
    for (std::string word; words >> word;) {
        const std::size_t eq = word.find('=');
        if (eq == std::string::npos || eq == 0) {
            throw ParseError("'" + out.kind + "' record: field without a value");
        }
        out.fields[word.substr(0, eq)] = word.substr(eq + 1);
    }
    return out;
}

const std::string& field(const Line& line, const std::string& key) {
    const auto it = line.fields.find(key);
    if (it == line.fields.end()) {
        throw ParseError("'" + line.kind + "' record without " + key + "=");
    }
    return it->second;
}

std::uint64_t number_field(const Line& line, const std::string& key) {
    const std::string& text = field(line, key);
    std::uint64_t value = 0;
    const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), value);
    if (ec != std::errc() || end != text.data() + text.size()) {
        throw ParseError("'" + line.kind + "' record: " + key + "=" + escape_excerpt(text) +
                         " is not a number");
    }
    return value;
}

int errno_field(const Line& line) {
    const std::uint64_t err = number_field(line, "errno");
    if (err > 4095) {
        throw ParseError("'" + line.kind + "' record: errno out of range");
    }
    return static_cast<int>(err);
}

unsigned cpu_field(const Line& line) {
    const std::uint64_t cpu = number_field(line, "cpu");
    if (cpu >= kMaxCpus) {
        throw ParseError("'" + line.kind + "' record: cpu out of range");
    }
    return static_cast<unsigned>(cpu);
}

CpuSet cpus_field(const Line& line, const std::string& key) {
    const std::string& text = field(line, key);
    if (text == "-") {
        return {};
    }
    try {
        return parse_cpulist(text);
    } catch (const std::exception& e) {
        throw ParseError("'" + line.kind + "' record: " + key + ": " + e.what());
    }
}

std::optional<std::string> optional_field(const Line& line, const std::string& key) {
    const std::string& text = field(line, key);
    if (text == "-") {
        return std::nullopt;
    }
    auto value = decode(text);
    if (!value) {
        throw ParseError("'" + line.kind + "' record: bad escape in " + key);
    }
    return value;
}

template <typename E, std::size_t N>
E named_field(const Line& line, const std::string& key, const EnumNames<E, N>& names) {
    const auto value = find_by_name(names, field(line, key));
    if (!value) {
        throw ParseError("'" + line.kind + "' record: unknown " + key + " '" +
                         escape_excerpt(field(line, key)) + "'");
    }
    return *value;
}

std::vector<unsigned> order_field(const Line& line) {
    const std::string& text = field(line, "order");
    std::vector<unsigned> order;
    if (text == "-") {
        return order;
    }
    std::size_t start = 0;
    while (start <= text.size()) {
        const std::size_t comma = std::min(text.find(',', start), text.size());
        unsigned cpu = 0;
        const auto [end, ec] = std::from_chars(text.data() + start, text.data() + comma, cpu);
        if (ec != std::errc() || end != text.data() + comma || cpu >= kMaxCpus) {
            throw ParseError("'begin' record: bad order");
        }
        order.push_back(cpu);
        start = comma + 1;
    }
    return order;
}

}  // namespace

// ------------------------------------------------------------------ writing

std::uint64_t boottime_ns() {
    timespec now{};
    ::clock_gettime(CLOCK_BOOTTIME, &now);
    return static_cast<std::uint64_t>(now.tv_sec) * 1000000000ULL +
           static_cast<std::uint64_t>(now.tv_nsec);
}

std::string serialize_journal_header(const JournalRecord& r) {
    std::string out = std::string(kMagic) + "\n";
    out += sealed("begin batch=" + std::to_string(r.batch_id) + " action=" + to_string(r.action) +
                  " strategy=" + to_string(r.strategy) + " order=" + order_text(r.order) +
                  " online_before=" + cpus_text(r.online_before) + " rcu_expedited=" +
                  optional_text(r.rcu_expedited) + " smt_control=" + optional_text(r.smt_control) +
                  " boottime_ns=" + std::to_string(r.boottime_ns) +
                  " requests=" + std::to_string(r.requests.size()));
    for (const JournalRequest& request : r.requests) {
        out +=
            sealed("request mode=" + to_string(request.mode) + " cpus=" + cpus_text(request.cpus) +
                   " caller=" + (request.caller.empty() ? "-" : encode(request.caller)));
    }
    return out;
}

FileJournal::FileJournal(std::filesystem::path dir, std::function<void(const std::string&)> warn)
    : dir_(std::move(dir)), path_(dir_ / kJournalFileName), warn_(std::move(warn)) {}

FileJournal::~FileJournal() {
    if (fd_ >= 0) {
        ::close(fd_);
    }
}

void FileJournal::fail(const std::string& what, int err) {
    if (fd_ >= 0) {
        ::close(fd_);
        fd_ = -1;
    }
    // A header without its end would make the next start undo this batch, which goes on
    // and may well finish: the batch is unjournaled, so its journal goes.
    if (installed_) {
        ::unlink(path_.c_str());
        installed_ = false;
    }
    if (warn_) {
        warn_("batch journal " + path_.string() + ": " + what + ": " + std::strerror(err) +
              "; this batch is not journaled (a crash now would go unrecovered)");
    }
}

void FileJournal::begin(const JournalRecord& record) {
    if (fd_ >= 0) {
        ::close(fd_);
        fd_ = -1;
    }
    const std::filesystem::path fresh = dir_ / (std::string(kJournalFileName) + ".new");
    ::unlink(fresh.c_str());  // O_EXCL below: never write through what somebody left there
    const int fd =
        ::open(fresh.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
    if (fd < 0) {
        fail("create " + fresh.string(), errno);
        return;
    }
    fd_ = fd;
    if (const int err = write_all(fd_, serialize_journal_header(record)); err != 0) {
        ::unlink(fresh.c_str());
        fail("write", err);
        return;
    }
    if (::fsync(fd_) != 0) {
        const int err = errno;
        ::unlink(fresh.c_str());
        fail("fsync", err);
        return;
    }
    if (::rename(fresh.c_str(), path_.c_str()) != 0) {
        const int err = errno;
        ::unlink(fresh.c_str());
        fail("rename", err);
        return;
    }
    installed_ = true;
    if (const int err = fsync_dir(dir_); err != 0) {
        fail("fsync the directory", err);
    }
}

void FileJournal::append(const std::string& body) {
    if (fd_ < 0) {
        return;
    }
    if (const int err = write_all(fd_, sealed(body)); err != 0) {
        fail("append", err);
    }
}

void FileJournal::cpu_written(unsigned cpu, int err) {
    append("written cpu=" + std::to_string(cpu) + " errno=" + std::to_string(err));
}

void FileJournal::one_shot_written(int err) {
    append("one-shot errno=" + std::to_string(err));
}

void FileJournal::rollback_started() {
    append("rollback");
}

void FileJournal::cpu_restored(unsigned cpu, int err) {
    append("restored cpu=" + std::to_string(cpu) + " errno=" + std::to_string(err));
}

void FileJournal::end() {
    if (fd_ < 0) {
        return;
    }
    // The end record first: should the removal fail, recovery still sees a finished batch.
    append("end");
    if (fd_ < 0) {
        return;
    }
    ::close(fd_);
    fd_ = -1;
    installed_ = false;
    if (const int err = remove_journal_file(path_); err != 0 && warn_) {
        warn_("batch journal " + path_.string() + ": remove: " + std::strerror(err));
    }
}

int remove_journal_file(const std::filesystem::path& file) {
    if (::unlink(file.c_str()) != 0) {
        return errno;
    }
    fsync_dir(file.parent_path());
    return 0;
}

// ------------------------------------------------------------------ reading

namespace {

// The complete lines of `text`; a torn last line (no newline) is dropped.
std::vector<std::string_view> journal_lines(std::string_view rest) {
    std::vector<std::string_view> lines;
    while (!rest.empty()) {
        const std::size_t nl = rest.find('\n');
        if (nl == std::string_view::npos) {
            break;  // a torn last line: dropped
        }
        lines.push_back(rest.substr(0, nl));
        rest.remove_prefix(nl + 1);
    }
    return lines;
}

// The 'begin' record; returns how many 'request' records follow it.
std::size_t parse_begin(const Line& line, JournalRecord& r) {
    if (line.kind != "begin") {
        throw ParseError("expected the 'begin' record");
    }
    r.batch_id = number_field(line, "batch");
    r.action = named_field(line, "action", kActionNames);
    r.strategy = named_field(line, "strategy", kStrategyNames);
    r.order = order_field(line);
    r.online_before = cpus_field(line, "online_before");
    r.rcu_expedited = optional_field(line, "rcu_expedited");
    r.smt_control = optional_field(line, "smt_control");
    r.boottime_ns = number_field(line, "boottime_ns");
    const std::size_t requests = number_field(line, "requests");
    if (requests > kMaxCpus) {
        throw ParseError("too many requests");
    }
    return requests;
}

void parse_request(const Line& line, std::size_t requests, JournalRecord& r) {
    if (line.kind != "request") {
        throw ParseError("expected " + std::to_string(requests) + " 'request' records");
    }
    JournalRequest request;
    request.mode = named_field(line, "mode", kModeNames);
    request.cpus = cpus_field(line, "cpus");
    const auto caller = optional_field(line, "caller");
    request.caller = caller.value_or("");
    r.requests.push_back(std::move(request));
}

// A record of the batch's progress, after the header.
void parse_progress(const Line& line, JournalRecord& r) {
    if (r.ended) {
        throw ParseError("a record after 'end'");
    } else if (line.kind == "written") {
        r.written[cpu_field(line)] = errno_field(line);
    } else if (line.kind == "one-shot") {
        r.one_shot_error = errno_field(line);
    } else if (line.kind == "rollback") {
        r.rolling_back = true;
    } else if (line.kind == "restored") {
        r.restored[cpu_field(line)] = errno_field(line);
    } else if (line.kind == "end") {
        r.ended = true;
    } else {
        throw ParseError("unknown record '" + escape_excerpt(line.kind) + "'");
    }
}

}  // namespace

std::variant<JournalRecord, std::string> parse_journal(const std::string& text) {
    const std::vector<std::string_view> lines = journal_lines(text);
    if (lines.empty() || lines.front() != kMagic) {
        return std::string("not a cpuhpd batch journal (the first line is not '") + kMagic + "')";
    }
    try {
        JournalRecord r;
        std::size_t requests = 0;
        for (std::size_t i = 1; i < lines.size(); ++i) {
            const bool last = i + 1 == lines.size();
            const std::optional<Line> line = unseal(lines[i]);
            if (!line) {
                if (last && i > 1 + requests) {
                    break;  // a torn append: dropped
                }
                return "line " + std::to_string(i + 1) + ": checksum mismatch";
            }
            const std::string where = "line " + std::to_string(i + 1) + ": ";
            try {
                if (i == 1) {
                    requests = parse_begin(*line, r);
                } else if (i <= 1 + requests) {
                    parse_request(*line, requests, r);
                } else {
                    parse_progress(*line, r);
                }
            } catch (const ParseError& e) {
                return where + e.what();
            }
        }
        if (lines.size() < 2 + requests) {
            return std::string("the header is incomplete");
        }
        return r;
    } catch (const ParseError& e) {
        return std::string(e.what());
    }
}

}  // namespace cpuhpd
