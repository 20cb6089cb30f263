#include "example_board.hpp"

#include "boards/common/shared_parts.hpp"
#include "nicemu/regs_example.h"
#include "sum_engine.hpp"

namespace nicemu::example {

namespace {

class ExampleBoard final : public Board {
public:
  const std::string &name() const override { return name_; }
  const std::string &description() const override { return description_; }
  std::vector<ModelKey> model_keys() const override {
    std::vector<ModelKey> keys = shared_part_keys(SharedPart::HostDma);
    for (const ModelKey &k : SumEngine::model_keys())
      keys.push_back(k);
    return keys;
  }
  void assemble(CardAssembly &card, const Model &model) const override {
    install_shared_part(SharedPart::HostDma, card, model);
    card.install(NICEMU_SUM_BASE,
                 SumEngine::from_model(card.device_host(), model),
                 NICEMU_CAP_SUM);
  }

private:
  std::string name_ = "example";
  std::string description_ = "example card: host DMA and a SUM engine";
};

} // namespace

const Board &example_board() {
  static const ExampleBoard board;
  return board;
}

} // namespace nicemu::example
