// SPDX-License-Identifier: GPL-2.0-or-later
#include "dev_iotlb.hpp"

namespace viommu::sim {

DevIotlbWalk::DevIotlbWalk(Machine &m) : m_(m), lock_(m.make_lock("device_domain_lock")) {}

void DevIotlbWalk::flush_entries(unsigned cpu, size_t entries, unsigned devices)
{
    for (size_t i = 0; i < entries; i++) {
        m_.acquire(lock_, cpu, "flush_dev_iotlb");
        if (i == 0) {
            // the device_domain_info node and its pci_dev, per device
            Nanos walk = Nanos{devices} * 2 * m_.cost().node_visit;
            m_.advance(cpu, walk);
            walk_ns_ += walk;
        }
        m_.release(lock_, cpu);
        walks_++;
    }
}

void DevIotlbWalk::read_iovas(unsigned cpu, std::span<const unsigned> unmapped_by)
{
    Nanos ns = 0;
    for (unsigned by : unmapped_by)
        if (by != cpu) {
            ns += m_.transfer(by, cpu);
            iova_lines_++;
        }
    m_.advance(cpu, ns);
    iova_line_ns_ += ns;
}

}  // namespace viommu::sim
