// SPDX-License-Identifier: GPL-2.0-or-later
#include "cost.hpp"

#include <array>
#include <iterator>

namespace viommu::sim {

// Origins: docs/cost-model.rst, section "Values".  Nominal CPU: 2.6 GHz
// Sandy/Ivy Bridge Xeon (the machines of seeds 000 and 004).
CostModel CostModel::standard()
{
    return {
        .node_visit = 15,
        .tree_update = 80,
        .mag_op = 5,
        .lock_local = 20,
        .line_transfer = 32,
        .line_transfer_socket = 114,
        .atomic = 8,
        .handoff_lines = 3,
        .pte_update = 60,
        .inv_submit = 150,
        .inv_hw_fetch = 500,
        .inv_hw_desc = 300,
        .inv_poll = 30,
        .smmu_hw_desc = 160,
    };
}

namespace {

struct Field {
    std::string_view name;
    Nanos CostModel::*ns;  // or
    unsigned CostModel::*count;
    uint64_t min = 0;  // an interval between polls or a count: at least 1
};

constexpr Field fields[] = {
    {"node_visit", &CostModel::node_visit, nullptr},
    {"tree_update", &CostModel::tree_update, nullptr},
    {"mag_op", &CostModel::mag_op, nullptr},
    {"lock_local", &CostModel::lock_local, nullptr},
    {"line_transfer", &CostModel::line_transfer, nullptr},
    {"line_transfer_socket", &CostModel::line_transfer_socket, nullptr},
    {"atomic", &CostModel::atomic, nullptr},
    {"handoff_lines", nullptr, &CostModel::handoff_lines, 1},
    {"pte_update", &CostModel::pte_update, nullptr},
    {"inv_submit", &CostModel::inv_submit, nullptr},
    {"inv_hw_fetch", &CostModel::inv_hw_fetch, nullptr},
    {"inv_hw_desc", &CostModel::inv_hw_desc, nullptr},
    {"inv_poll", &CostModel::inv_poll, nullptr, 1},
    {"smmu_hw_desc", &CostModel::smmu_hw_desc, nullptr},
};

constexpr auto field_names = [] {
    std::array<std::string_view, std::size(fields)> n{};
    for (size_t i = 0; i < n.size(); i++)
        n[i] = fields[i].name;
    return n;
}();

uint64_t value_of(const CostModel &c, const Field &f)
{
    return f.count ? uint64_t{c.*f.count} : c.*f.ns;
}

}  // namespace

std::span<const std::string_view> CostModel::names()
{
    return field_names;
}

bool CostModel::set(std::string_view name, uint64_t value, std::string *error)
{
    for (const Field &f : fields) {
        if (f.name != name)
            continue;
        const uint64_t hi = f.count ? 16 : 100'000;  // 100 us: 200x the largest cited cost
        if (value < f.min || value > hi) {
            if (error)
                *error = std::string(name) + ": needs " + (f.count ? "a count" : "whole ns") +
                         " from " + std::to_string(f.min) + " to " + std::to_string(hi);
            return false;
        }
        if (f.count)
            this->*f.count = unsigned(value);
        else
            this->*f.ns = value;
        return true;
    }
    if (error)
        *error =
            std::string(name) + ": not a cost-model field (viommu-sim --cost-model lists them)";
    return false;
}

uint64_t CostModel::get(std::string_view name) const
{
    for (const Field &f : fields)
        if (f.name == name)
            return value_of(*this, f);
    return 0;
}

std::string CostModel::json() const
{
    std::string out = "{";
    for (const Field &f : fields)
        out += (out.size() > 1 ? ",\"" : "\"") + std::string(f.name) +
               "\":" + std::to_string(value_of(*this, f));
    return out + "}";
}

}  // namespace viommu::sim
