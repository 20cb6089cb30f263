#include "sum_engine.hpp"

#include "nicemu/regs_example.h"

#include <cstring>

namespace nicemu::example {

const RegisterLayout &SumEngine::layout() {
#define SUM_REGISTER(dev, name, off, bits, count, acc, desc)                   \
  RegisterInfo{#dev, #name, 16, off, Access::acc, desc, (bits) / 8, count},
  static const RegisterLayout layout("SUM", 0x2000,
                                     {NICEMU_SUM_REGS(SUM_REGISTER)});
#undef SUM_REGISTER
  return layout;
}

SumEngine::SumEngine(DeviceHost &host, uint64_t clock_hz,
                     uint32_t startup_cycles)
    : Device(layout()), host_(host), clock_(host, clock_hz),
      startup_cycles_(startup_cycles) {
  registers()
      .bind(NICEMU_SUM_ADDR, addr_)
      .bind(NICEMU_SUM_LENGTH, length_)
      .on_write(NICEMU_SUM_CTRL,
                [this](uint64_t v) {
                  if (v & NICEMU_SUM_START)
                    start();
                })
      .write_one_to_clear(NICEMU_SUM_STATUS, status_, NICEMU_SUM_DONE)
      .on_read(NICEMU_SUM_RESULT, [this] { return result_; })
      .on_read(NICEMU_SUM_HISTORY, [this](uint32_t i) { return history_[i]; });
}

std::unique_ptr<SumEngine> SumEngine::from_model(DeviceHost &host,
                                                 const Model &model) {
  return std::make_unique<SumEngine>(
      host, uint64_t(model.param("sum.clock_hz")),
      uint32_t(model.param("sum.startup_cycles")));
}

std::vector<ModelKey> SumEngine::model_keys() {
  return {{"params.sum.clock_hz", KeyUse::Required, "SUM engine", kClockHz},
          {"params.sum.startup_cycles", KeyUse::Required, "SUM engine",
           whole_number(0, 1000)}};
}

// The words are read when the engine starts; the sum is ready after the
// start-up and one cycle per word, counted from the engine's next edge.
void SumEngine::start() {
  if (status_ & NICEMU_SUM_BUSY)
    return;
  std::vector<uint32_t> words(length_ / 4);
  if (!host_.card_read(addr_, words.data(), uint32_t(words.size() * 4)))
    words.clear(); // outside card memory: the sum of nothing
  uint64_t sum = 0;
  for (uint32_t w : words)
    sum += w;
  status_ = (status_ & ~NICEMU_SUM_DONE) | NICEMU_SUM_BUSY;
  Time done = clock_.after(startup_cycles_ + words.size());
  host_.scheduler().schedule(done, "sum: done", [this, sum] { finish(sum); });
}

void SumEngine::finish(uint64_t sum) {
  result_ = sum;
  std::memmove(&history_[1], &history_[0], 7 * sizeof history_[0]);
  history_[0] = uint32_t(sum);
  status_ = (status_ & ~NICEMU_SUM_BUSY) | NICEMU_SUM_DONE;
  host_.raise_irq(NICEMU_IRQ_SUM);
}

} // namespace nicemu::example
