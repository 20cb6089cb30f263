// The firmware linker script generated from a model's memories.
#include "mem/ldscript.hpp"

#include "nicemu/error.hpp"
#include "nicemu/model.hpp"

#include <doctest/doctest.h>

#include <string>

namespace {

nicemu::Model unified_model() {
  nicemu::Model model;
  model.name = "unified";
  model.memories.push_back({"sram", 0x00000000, 0x40000, true, true});
  return model;
}

nicemu::Model split_model() {
  nicemu::Model model;
  model.name = "split";
  model.memories.push_back({"isram", 0x00000000, 0x20000, true, false});
  model.memories.push_back({"dsram", 0x00100000, 0x20000, false, true});
  model.memories.push_back({"llcm", 0x00200000, 0x20000, false, true});
  return model;
}

bool contains(const std::string &text, const std::string &part) {
  return text.find(part) != std::string::npos;
}

// The text between `start` and the next "} >" (an output section's body and
// its placement).
std::string section(const std::string &script, const std::string &start) {
  size_t begin = script.find(start);
  REQUIRE(begin != std::string::npos);
  size_t end = script.find('\n', script.find("} >", begin));
  return script.substr(begin, end - begin);
}

} // namespace

TEST_CASE("ldscript: unified SRAM holds everything") {
  std::string script = nicemu::linker_script_for(unified_model());
  CHECK(contains(script, "ENTRY(_start)"));
  CHECK(contains(script,
                 "sram (rwx) : ORIGIN = 0x00000000, LENGTH = 0x00040000"));
  CHECK(contains(section(script, ".text :"), "} > sram :text"));
  CHECK(contains(section(script, ".text :"), "KEEP(*(.text.start))"));
  CHECK(contains(section(script, ".rodata :"), "} > sram :rodata"));
  CHECK(contains(section(script, ".data :"), "} > sram :data"));
  CHECK(contains(section(script, ".bss :"), "} > sram :data"));
  CHECK(
      contains(script, "nicemu_mailbox = ORIGIN(sram) + LENGTH(sram) - 4096;"));
  CHECK(contains(script, "_stack_top = nicemu_mailbox;"));
}

TEST_CASE("ldscript: split SRAM puts constants with the data") {
  std::string script = nicemu::linker_script_for(split_model());
  CHECK(contains(script,
                 "isram (rx) : ORIGIN = 0x00000000, LENGTH = 0x00020000"));
  CHECK(contains(script,
                 "dsram (rw) : ORIGIN = 0x00100000, LENGTH = 0x00020000"));
  CHECK(contains(section(script, ".text :"), "} > isram :text"));
  CHECK(contains(section(script, ".rodata :"), "} > dsram :rodata"));
  CHECK(contains(section(script, ".init_array :"), "} > dsram :rodata"));
  CHECK(contains(section(script, ".data :"), "} > dsram :data"));
  CHECK(contains(script,
                 "nicemu_mailbox = ORIGIN(dsram) + LENGTH(dsram) - 4096;"));
}

TEST_CASE("ldscript: other memories are regions with unloaded sections") {
  std::string script = nicemu::linker_script_for(split_model());
  CHECK(
      contains(script, "llcm (rw) : ORIGIN = 0x00200000, LENGTH = 0x00020000"));
  CHECK(contains(section(script, ".llcm (NOLOAD) :"), "} > llcm :NONE"));
}

TEST_CASE("ldscript: symbols the runtime needs are defined") {
  std::string script = nicemu::linker_script_for(unified_model());
  for (const char *symbol :
       {"__init_array_start = .;", "__init_array_end = .;",
        "__ctors_start = .;", "__ctors_end = .;", "__bss_start = .;",
        "__bss_end = .;", "_end = .;", "_stack_top ="}) {
    CAPTURE(symbol);
    CHECK(contains(script, symbol));
  }
  CHECK(contains(script, "ASSERT(_stack_top - _end >= __stack_min_size"));
  CHECK(contains(script, "/DISCARD/"));
}

TEST_CASE("ldscript: odd memory names become identifiers") {
  nicemu::Model model;
  model.name = "odd";
  model.memories.push_back({"2nd-sram", 0x1000, 0x1000, true, true});
  std::string script = nicemu::linker_script_for(model);
  CHECK(contains(script, "mem_2nd_sram (rwx) : ORIGIN = 0x00001000"));
}

TEST_CASE("ldscript: a model without code or data memory is an error") {
  nicemu::Model no_data;
  no_data.name = "rom";
  no_data.memories.push_back({"rom", 0, 0x1000, true, false});
  CHECK_THROWS_AS(nicemu::linker_script_for(no_data), nicemu::Error);

  nicemu::Model no_code;
  no_code.name = "ram";
  no_code.memories.push_back({"ram", 0, 0x1000, false, true});
  CHECK_THROWS_AS(nicemu::linker_script_for(no_code), nicemu::Error);
}
