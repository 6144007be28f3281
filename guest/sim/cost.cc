// SPDX-License-Identifier: GPL-2.0-or-later
#include "cost.hpp"

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

std::string CostModel::json() const
{
    std::string out = "{";
    auto field = [&out](const char *k, uint64_t v) {
        if (out.size() > 1)
            out += ',';
        out += '"' + std::string(k) + "\":" + std::to_string(v);
    };
    field("node_visit", node_visit);
    field("tree_update", tree_update);
    field("mag_op", mag_op);
    field("lock_local", lock_local);
    field("line_transfer", line_transfer);
    field("line_transfer_socket", line_transfer_socket);
    field("atomic", atomic);
    field("handoff_lines", handoff_lines);
    field("pte_update", pte_update);
    field("inv_submit", inv_submit);
    field("inv_hw_fetch", inv_hw_fetch);
    field("inv_hw_desc", inv_hw_desc);
    field("inv_poll", inv_poll);
    field("smmu_hw_desc", smmu_hw_desc);
    return out + "}";
}

}  // namespace viommu::sim
