// Where a batch records its intent before the first write and its end after the last,
// so that a crash mid-batch can be recognised and repaired at the next start.
#pragma once

#include <cstdint>

#include "planner.h"

namespace cpuhpd {

class BatchJournal {
public:
    virtual ~BatchJournal() = default;
    virtual void begin(std::uint64_t batch_id, const Plan& plan) = 0;
    virtual void end(std::uint64_t batch_id) = 0;
};

// Records nothing (the journal proper comes with a later issue).
class NullJournal final : public BatchJournal {
public:
    void begin(std::uint64_t, const Plan&) override {}
    void end(std::uint64_t) override {}
};

}  // namespace cpuhpd
