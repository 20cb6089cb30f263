// The report printed when firmware faults: node, PC with symbol, the
// instruction, the registers, and the virtual time.
#pragma once

#include <string>

namespace nicemu {

class Node;

std::string fault_report(const Node &node);

} // namespace nicemu
