// LLVM's def/use of AMDGPU machine instructions, for tests/isa/defuse_llvm.rs.
//
// Usage: llvm_defuse CPU < lines, each line the bytes of one instruction in
// hex ("0a0b0c0d 00000000" or "0a0b0c0d"; spaces ignored). For each line it
// disassembles the bytes with LLVM's AMDGPU MCDisassembler and prints one
// line, tab-separated:
//
//   NAME SIZE OPERAND... idef:UNITS iuse:UNITS
//
// where NAME is LLVM's opcode name, SIZE the decoded length in bytes, and
// each OPERAND of the MCInst is
//   oK:D:UNITS      register, a def (K < the description's NumDefs)
//   oK:badclass:... a register outside the operand's register class (LLVM
//                   prints it with an "Invalid register" comment)
//   oK:U:UNITS      register, a use
//   oK:U:tJ:UNITS   register, a use tied to operand J (TIED_TO constraint
//                   of the real instruction or of its codegen pseudo)
//   oK:missing:tJ   an operand of the description the MCInst lacks, tied
//                   to operand J (a read of J's register)
//   oK:none | oK:imm | oK:expr | oK:other
// UNITS are the register's 32-bit registers (see is_unit; a register with
// none, such as SCC, stands for itself), comma-separated. `idef`/`iuse` are the implicit defs and uses of the
// MCInstrDesc. A line that does not decode prints `invalid`.
//
// Built against libLLVM-19 by the test (clang++-19, llvm-config-19 flags).

#include "llvm/MC/MCAsmInfo.h"
#include "llvm/MC/MCContext.h"
#include "llvm/MC/MCDisassembler/MCDisassembler.h"
#include "llvm/MC/MCInst.h"
#include "llvm/MC/MCInstrInfo.h"
#include "llvm/MC/MCRegisterInfo.h"
#include "llvm/MC/MCSubtargetInfo.h"
#include "llvm/MC/MCTargetOptions.h"
#include "llvm/MC/TargetRegistry.h"
#include "llvm/Support/raw_ostream.h"
#include "llvm/TargetParser/Triple.h"

#include <cstdio>
#include <iostream>
#include <map>
#include <memory>
#include <string>
#include <vector>

extern "C" void LLVMInitializeAMDGPUTargetInfo();
extern "C" void LLVMInitializeAMDGPUTargetMC();
extern "C" void LLVMInitializeAMDGPUDisassembler();

using namespace llvm;

namespace {

// Whether `r` is a 32-bit register: in a 32-bit register class, or (for the
// per-generation variants the disassembler makes, such as TTMP0_gfx9plus,
// which are in no class) made of sub-registers that have none themselves
// (its 16-bit halves).
bool is_unit(const MCRegisterInfo &mri, MCRegister r,
             const std::vector<bool> &in32) {
  if (r < in32.size() && in32[r])
    return true;
  bool any = false;
  for (MCPhysReg sub : mri.subregs(r)) {
    any = true;
    if (!mri.subregs(sub).empty())
      return false;
  }
  return any;
}

// The 32-bit registers making up `reg`, or `reg` itself if it has none
// (SCC, MODE).
std::string units(const MCRegisterInfo &mri, MCRegister reg,
                  const std::vector<bool> &in32) {
  std::string out;
  for (MCPhysReg sub : mri.subregs_inclusive(reg)) {
    if (is_unit(mri, sub, in32)) {
      if (!out.empty())
        out += ",";
      out += mri.getName(sub);
    }
  }
  if (out.empty())
    out = mri.getName(reg);
  return out;
}

// The codegen pseudo a real (encoded) instruction comes from: its name
// without the encoding suffixes (`S_BITSET0_B32_vi` -> `S_BITSET0_B32`,
// `..._gfx90a_acd` -> ...), a pseudo with as many operands. LLVM 19 drops the
// pseudo's tied-operand constraints from some real instructions.
const MCInstrDesc *pseudo_of(const MCInstrInfo &mii,
                             const std::map<std::string, unsigned> &by_name,
                             unsigned opcode) {
  const MCInstrDesc &real = mii.get(opcode);
  std::string name = mii.getName(opcode).str();
  for (int strip = 0; strip < 3; ++strip) {
    size_t cut = name.rfind('_');
    if (cut == std::string::npos)
      return nullptr;
    name.resize(cut);
    auto it = by_name.find(name);
    if (it == by_name.end())
      continue;
    const MCInstrDesc &p = mii.get(it->second);
    if (p.isPseudo() && p.getNumOperands() == real.getNumOperands())
      return &p;
  }
  return nullptr;
}

int hexval(char c) {
  if (c >= '0' && c <= '9')
    return c - '0';
  if (c >= 'a' && c <= 'f')
    return c - 'a' + 10;
  if (c >= 'A' && c <= 'F')
    return c - 'A' + 10;
  return -1;
}

} // namespace

int main(int argc, char **argv) {
  if (argc != 2) {
    std::fprintf(stderr, "usage: %s CPU < hex lines\n", argv[0]);
    return 2;
  }
  LLVMInitializeAMDGPUTargetInfo();
  LLVMInitializeAMDGPUTargetMC();
  LLVMInitializeAMDGPUDisassembler();
  const std::string tt = "amdgcn-amd-amdhsa";
  std::string err;
  const Target *target = TargetRegistry::lookupTarget(tt, err);
  if (!target) {
    std::fprintf(stderr, "no AMDGPU target: %s\n", err.c_str());
    return 2;
  }
  std::unique_ptr<MCRegisterInfo> mri(target->createMCRegInfo(tt));
  MCTargetOptions options;
  std::unique_ptr<MCAsmInfo> mai(target->createMCAsmInfo(*mri, tt, options));
  std::unique_ptr<MCSubtargetInfo> sti(
      target->createMCSubtargetInfo(tt, argv[1], ""));
  std::unique_ptr<MCInstrInfo> mii(target->createMCInstrInfo());
  if (!mri || !mai || !sti || !mii) {
    std::fprintf(stderr, "could not create the MC layer for %s\n", argv[1]);
    return 2;
  }
  MCContext ctx(Triple(tt), mai.get(), mri.get(), sti.get(), nullptr,
                &options);
  std::unique_ptr<MCDisassembler> dis(
      target->createMCDisassembler(*sti, ctx));
  if (!dis) {
    std::fprintf(stderr, "no AMDGPU disassembler\n");
    return 2;
  }
  // Registers that belong to some 32-bit register class.
  std::vector<bool> in32(mri->getNumRegs(), false);
  for (const MCRegisterClass &rc : mri->regclasses()) {
    if (rc.getSizeInBits() != 32)
      continue;
    for (MCPhysReg r : rc)
      if (r < in32.size())
        in32[r] = true;
  }

  std::map<std::string, unsigned> by_name;
  for (unsigned op = 0; op < mii->getNumOpcodes(); ++op)
    by_name[mii->getName(op).str()] = op;

  std::string line;
  std::string out;
  while (std::getline(std::cin, line)) {
    std::vector<uint8_t> bytes;
    int hi = -1;
    for (char c : line) {
      int v = hexval(c);
      if (v < 0)
        continue;
      if (hi < 0) {
        hi = v;
      } else {
        bytes.push_back(uint8_t(hi << 4 | v));
        hi = -1;
      }
    }
    MCInst inst;
    uint64_t size = 0;
    std::string comments;
    raw_string_ostream cs(comments);
    auto status = dis->getInstruction(inst, size, bytes, 0, cs);
    if (status != MCDisassembler::Success) {
      out += "invalid\n";
      continue;
    }
    const MCInstrDesc &desc = mii->get(inst.getOpcode());
    const MCInstrDesc *pseudo = pseudo_of(*mii, by_name, inst.getOpcode());
    // TIED_TO of operand k, from the real instruction or else its pseudo.
    auto tied_to = [&](unsigned k) {
      int t = k < desc.getNumOperands()
                  ? desc.getOperandConstraint(k, MCOI::TIED_TO)
                  : -1;
      if (t < 0 && pseudo && k < pseudo->getNumOperands())
        t = pseudo->getOperandConstraint(k, MCOI::TIED_TO);
      return t;
    };
    out += mii->getName(inst.getOpcode()).str();
    out += "\t" + std::to_string(size);
    for (unsigned k = 0; k < inst.getNumOperands(); ++k) {
      const MCOperand &op = inst.getOperand(k);
      out += "\to" + std::to_string(k) + ":";
      if (op.isReg()) {
        if (!op.getReg()) {
          out += "none";
          continue;
        }
        // A register outside the operand's class (an SGPR where an MFMA
        // takes VGPRs/AGPRs): LLVM's printer flags these as invalid.
        if (k < desc.getNumOperands()) {
          int rc = desc.operands()[k].RegClass;
          if (rc >= 0 && unsigned(rc) < mri->getNumRegClasses() &&
              !mri->getRegClass(rc).contains(op.getReg()))
            out += "badclass:";
        }
        bool def = k < desc.getNumDefs();
        out += def ? "D:" : "U:";
        if (!def) {
          int tied = tied_to(k);
          if (tied >= 0)
            out += "t" + std::to_string(tied) + ":";
        }
        out += units(*mri, op.getReg(), in32);
      } else if (op.isImm() || op.isSFPImm() || op.isDFPImm()) {
        out += "imm";
      } else if (op.isExpr()) {
        out += "expr";
      } else {
        out += "other";
      }
    }
    // Tied inputs the disassembler leaves out of the MCInst (s_bitset*,
    // v_pk_fmac_f16_e32, ...): the description still reads the register of
    // the operand they are tied to.
    for (unsigned k = inst.getNumOperands(); k < desc.getNumOperands(); ++k) {
      int tied = tied_to(k);
      if (tied >= 0)
        out += "\to" + std::to_string(k) + ":missing:t" + std::to_string(tied);
    }
    out += "\tidef:";
    bool first = true;
    for (MCPhysReg r : desc.implicit_defs()) {
      out += (first ? "" : ",") + units(*mri, r, in32);
      first = false;
    }
    out += "\tiuse:";
    first = true;
    for (MCPhysReg r : desc.implicit_uses()) {
      out += (first ? "" : ",") + units(*mri, r, in32);
      first = false;
    }
    out += "\n";
  }
  std::fwrite(out.data(), 1, out.size(), stdout);
  return 0;
}
