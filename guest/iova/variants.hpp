// SPDX-License-Identifier: GPL-2.0-or-later
// Constructors of the allocator variants, used by Allocator::create().
#pragma once

#include <memory>
#include <string_view>

#include "allocator.hpp"

namespace viommu::iova {

// linux-4.4 ... linux-6.7; null for other names.
std::unique_ptr<Allocator> make_kernel_allocator(std::string_view name, Env &env,
                                                 const Config &cfg);
std::unique_ptr<Allocator> make_percpu_batch(Env &env, const Config &cfg);
std::unique_ptr<Allocator> make_range_ownership(Env &env, const Config &cfg);

// JSON helpers shared by the variants' extra_json().
void json_member(std::string &out, std::string_view key, uint64_t v);

}  // namespace viommu::iova
