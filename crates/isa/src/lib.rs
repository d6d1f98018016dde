//! AMD GPU instructions: decode, format (LLVM syntax), encode, def/use.
