// Parsing follows lib/bitmap.c of Linux 6.1 (bitmap_parselist, bitmap_parse) and
// formatting follows lib/vsprintf.c (bitmap_list_string, bitmap_string), with these
// deliberate differences, all of which reject input rather than read it differently:
//  - "N" (last bit) and "all" need the bitmap width, unknown here: rejected.
//  - Empty regions (",1", "1,,2", "1,") are rejected; the kernel skips them.
//  - A group of 0 used CPUs ("0-31:0/8") is rejected; the kernel sets nothing for it.
//  - Only whitespace may follow the first newline; the kernel ignores whatever follows a
//    newline that ends a region ("1\n2" is {1} there).
//  - CPU numbers must be below kMaxCpus (the kernel's nbits), or below the caller's bound.
//  - Only ASCII whitespace separates: the kernel's isspace() also takes byte 0xa0 (Latin-1
//    NBSP), which in UTF-8 input is the second byte of a character ("\xc2\xa0", "\xc3\xa0").
// Input text quoted in messages goes through escape_excerpt(): bounded and printable ASCII.
#include "cpulist.h"

#include <cstdint>
#include <limits>

#include "input.h"
#include "sysfs.h"

namespace cpuhpd {

MaskError::MaskError(std::string reason, std::string_view raw_token, std::size_t position)
    : std::runtime_error(reason),
      reason_(std::move(reason)),
      token_(escape_excerpt(raw_token)),
      position_(position) {}

namespace {

bool is_digit(char c) {
    return c >= '0' && c <= '9';
}

std::string describe_char(char c) {
    auto u = static_cast<unsigned char>(c);
    if (u >= 0x21 && u < 0x7f) {
        return std::string("'") + c + "'";
    }
    static const char hex[] = "0123456789abcdef";
    return std::string("byte 0x") + hex[u >> 4] + hex[u & 15];
}

// "(largest supported is 8191)" or, with a machine's bound, "(the last possible CPU is 15)".
std::string bound_text(unsigned cpu_bound) {
    return cpu_bound >= kMaxCpus
               ? "(largest supported is " + std::to_string(kMaxCpus - 1) + ")"
               : "(the last possible CPU is " + std::to_string(cpu_bound - 1) + ")";
}

// Cuts `text` at its first newline; only whitespace may follow it.
std::string_view cut_at_newline(std::string_view text, std::size_t base_offset) {
    auto nl = text.find('\n');
    if (nl == std::string_view::npos) {
        return text;
    }
    for (std::size_t i = nl + 1; i < text.size(); ++i) {
        if (!is_mask_space(text[i])) {
            std::size_t end = i;
            while (end < text.size() && !is_mask_space(text[end])) {
                ++end;
            }
            throw MaskError(
                "unexpected text '" + escape_excerpt(text.substr(i, end - i)) + "' after a newline",
                text.substr(i, end - i), base_offset + i);
        }
    }
    return text.substr(0, nl);
}

struct Number {
    std::uint64_t value = 0;
    std::size_t begin = 0;  // offset in the region
    std::size_t end = 0;
};

class RegionParser {
public:
    RegionParser(std::string_view region, std::size_t position, unsigned cpu_bound)
        : region_(region), position_(position), cpu_bound_(cpu_bound) {}

    void parse_into(CpuSet& out) {
        if (region_.size() >= 3 && (region_[0] | 0x20) == 'a' && (region_[1] | 0x20) == 'l' &&
            (region_[2] | 0x20) == 'l') {
            fail("'all' is not supported inside a cpulist (use the selector 'all' on its own)");
        }
        Number start = number("a CPU number");
        Number end = start;
        std::uint64_t used = 0;
        std::uint64_t group = 0;
        bool grouped = false;
        if (pos_ < region_.size()) {
            if (region_[pos_] != '-') {
                unexpected(region_[pos_] == ':'
                               ? "a range before ':' (group form is a-b:used/group)"
                               : "'-', ',' or the end of the region");
            }
            ++pos_;
            end = number("a CPU number after '-'");
            if (pos_ < region_.size()) {
                if (region_[pos_] != ':') {
                    unexpected("':', ',' or the end of the region");
                }
                ++pos_;
                used = number("the used count after ':'").value;
                if (pos_ >= region_.size() || region_[pos_] != '/') {
                    unexpected("'/' after the used count");
                }
                ++pos_;
                group = number("the group size after '/'").value;
                if (pos_ < region_.size()) {
                    unexpected("',' or the end of the region");
                }
                grouped = true;
            }
        }
        if (start.value > end.value) {
            fail("reversed range '" + quoted() + "' (first CPU above last)");
        }
        if (grouped) {
            if (group == 0) {
                fail("group size 0 in '" + quoted() + "'");
            }
            if (used == 0) {
                fail("used count 0 in '" + quoted() + "' selects no CPU");
            }
            if (used > group) {
                fail("used count above group size in '" + quoted() + "'");
            }
        } else {
            used = group = end.value - start.value + 1;
        }
        // Checked before any CPU is added: filling is bounded by the bound.
        if (end.value >= cpu_bound_) {
            const Number& bad = start.value >= cpu_bound_ ? start : end;
            const std::string_view raw = region_.substr(bad.begin, bad.end - bad.begin);
            throw MaskError(
                "CPU number " + escape_excerpt(raw) + " is out of range " + bound_text(cpu_bound_),
                raw, position_ + bad.begin);
        }
        // A plain range is one group of all its CPUs: a single add_range().
        for (std::uint64_t first = start.value; first <= end.value; first += group) {
            std::uint64_t last = std::min(end.value, first + used - 1);
            out.add_range(static_cast<unsigned>(first), static_cast<unsigned>(last));
        }
    }

private:
    std::string quoted() const { return escape_excerpt(region_); }

    [[noreturn]] void fail(const std::string& reason) const {
        throw MaskError(reason, region_, position_);
    }

    [[noreturn]] void unexpected(const std::string& expected) const {
        fail("invalid cpulist region '" + quoted() + "': expected " + expected + ", found " +
             (pos_ < region_.size() ? describe_char(region_[pos_])
                                    : std::string("the end of the region")));
    }

    Number number(const char* what) {
        Number n;
        n.begin = pos_;
        if (pos_ < region_.size() && region_[pos_] == 'N') {
            throw MaskError(
                "'N' (the last CPU) is not supported: the number of CPUs is not known when parsing "
                "'" +
                    quoted() + "'",
                "N", position_ + pos_);
        }
        if (pos_ >= region_.size() || !is_digit(region_[pos_])) {
            unexpected(what);
        }
        bool overflow = false;
        while (pos_ < region_.size() && is_digit(region_[pos_])) {
            n.value = n.value * 10 + static_cast<unsigned>(region_[pos_] - '0');
            if (n.value > std::numeric_limits<unsigned int>::max()) {
                overflow = true;
                n.value = std::numeric_limits<unsigned int>::max() + std::uint64_t{1};
            }
            ++pos_;
        }
        n.end = pos_;
        if (overflow) {
            const std::string_view raw = region_.substr(n.begin, n.end - n.begin);
            throw MaskError("number " + escape_excerpt(raw) + " is too large", raw,
                            position_ + n.begin);
        }
        return n;
    }

    std::string_view region_;
    std::size_t position_;
    unsigned cpu_bound_;
    std::size_t pos_ = 0;
};

int hex_value(char c) {
    if (c >= '0' && c <= '9') {
        return c - '0';
    }
    if ((c | 0x20) >= 'a' && (c | 0x20) <= 'f') {
        return (c | 0x20) - 'a' + 10;
    }
    return -1;
}

}  // namespace

CpuSet parse_cpulist(std::string_view text, std::size_t base_offset, unsigned cpu_bound) {
    cpu_bound = std::min(cpu_bound, kMaxCpus);
    std::string_view body = cut_at_newline(text, base_offset);
    CpuSet out;
    bool seen_region = false;
    bool comma_pending = false;  // a comma was read and no region has followed it yet
    std::size_t comma_pos = 0;
    std::size_t i = 0;
    while (true) {
        while (i < body.size() && is_mask_space(body[i])) {
            ++i;
        }
        if (i >= body.size()) {
            if (comma_pending) {
                throw MaskError("empty region after the trailing ','", ",",
                                base_offset + comma_pos);
            }
            break;
        }
        if (body[i] == ',') {
            if (comma_pending || !seen_region) {
                throw MaskError("empty region before ','", ",", base_offset + i);
            }
            comma_pending = true;
            comma_pos = i;
            ++i;
            continue;
        }
        std::size_t begin = i;
        while (i < body.size() && !is_mask_separator(body[i])) {
            ++i;
        }
        RegionParser(body.substr(begin, i - begin), base_offset + begin, cpu_bound).parse_into(out);
        seen_region = true;
        comma_pending = false;
    }
    return out;
}

std::string format_cpulist(const CpuSet& cpus) {
    std::string out;
    std::vector<unsigned> m = cpus.members();
    for (std::size_t i = 0; i < m.size();) {
        std::size_t j = i;
        while (j + 1 < m.size() && m[j + 1] == m[j] + 1) {
            ++j;
        }
        if (!out.empty()) {
            out += ',';
        }
        out += std::to_string(m[i]);
        if (j > i) {
            out += '-';
            out += std::to_string(m[j]);
        }
        i = j + 1;
    }
    return out;
}

CpuSet parse_cpumap(std::string_view text, std::size_t base_offset, unsigned cpu_bound) {
    cpu_bound = std::min(cpu_bound, kMaxCpus);
    std::string_view body = cut_at_newline(text, base_offset);
    constexpr std::size_t kMaxChunks = (kMaxCpus + 31) / 32;
    // Chunks from the right, as the kernel reads them.
    struct Chunk {
        std::size_t begin, end;
    };
    std::vector<Chunk> chunks;
    std::size_t i = body.size();
    while (i > 0) {
        while (i > 0 && is_mask_separator(body[i - 1])) {
            --i;
        }
        if (i == 0) {
            break;
        }
        std::size_t end = i;
        while (i > 0 && !is_mask_separator(body[i - 1])) {
            --i;
        }
        chunks.push_back({i, end});
    }
    CpuSet out;
    for (std::size_t k = 0; k < chunks.size(); ++k) {
        const std::string_view raw = body.substr(chunks[k].begin, chunks[k].end - chunks[k].begin);
        const std::string token = escape_excerpt(raw);
        std::size_t position = base_offset + chunks[k].begin;
        for (const char c : raw) {
            if (hex_value(c) < 0) {
                throw MaskError(
                    "invalid hex digit " + describe_char(c) + " in cpumap group '" + token + "'",
                    raw, position);
            }
        }
        if (raw.size() > 8) {
            throw MaskError("cpumap group '" + token + "' has more than 8 hex digits (32 bits)",
                            raw, position);
        }
        std::uint32_t value = 0;
        for (char c : raw) {
            value = (value << 4) | static_cast<std::uint32_t>(hex_value(c));
        }
        if (k >= kMaxChunks) {
            throw MaskError("cpumap group '" + token + "' is beyond the largest supported CPU " +
                                std::to_string(kMaxCpus - 1),
                            raw, position);
        }
        for (unsigned bit = 0; bit < 32; ++bit) {
            if (value & (std::uint32_t{1} << bit)) {
                const auto cpu = static_cast<unsigned>(k * 32 + bit);
                if (cpu >= cpu_bound) {
                    throw MaskError("cpumap group '" + token + "' sets CPU " + std::to_string(cpu) +
                                        ", out of range " + bound_text(cpu_bound),
                                    raw, position);
                }
                out.add(cpu);
            }
        }
    }
    return out;
}

std::optional<CpuSet> read_cpulist_file(const std::filesystem::path& file) {
    const auto text = read_attribute(file);
    if (!text) {
        return std::nullopt;
    }
    try {
        return parse_cpulist(*text);
    } catch (const MaskError&) {
        return std::nullopt;
    }
}

}  // namespace cpuhpd
