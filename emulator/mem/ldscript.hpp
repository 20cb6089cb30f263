// The firmware linker script, generated from a model's memory map so that
// one description of the card (the model file) drives both the emulator and
// the firmware link. `nicemu ldscript --model NAME -o FILE` writes it.
#pragma once

#include <string>

namespace nicemu {

struct Model;

// A GNU ld / lld linker script for firmware running on `model`. Code goes in
// the first executable memory, data, .bss and the stack in the first writable
// one; read-only data goes with the code when the code memory is writable
// (unified SRAM) and with the data otherwise (split instruction/data SRAM).
// Throws nicemu::Error when the model has no executable or no writable memory.
std::string linker_script_for(const Model &model);

} // namespace nicemu
