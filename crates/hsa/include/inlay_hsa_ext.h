/* Inlay's additions to the HSA executable API (libhsa-runtime64.so.1 from Inlay).
 *
 * Device functions (functions without a kernel descriptor, local ones
 * included) are executable symbols of kind HSA_SYMBOL_KIND_INDIRECT_FUNCTION.
 * hsa_executable_symbol_get_info answers for them: TYPE, NAME_LENGTH, NAME,
 * MODULE_NAME_LENGTH, MODULE_NAME, LINKAGE (PROGRAM for global functions,
 * MODULE for local ones, whose module name is their code object's URI),
 * IS_DEFINITION, AGENT, INDIRECT_FUNCTION_OBJECT (the loaded address, uint64_t),
 * INDIRECT_FUNCTION_CALL_CONVENTION (0), and the attribute below. */
#ifndef INLAY_HSA_EXT_H
#define INLAY_HSA_EXT_H

#include <hsa/hsa.h>

/* Size in bytes of a device function's code (uint64_t), from its ELF symbol.
 * In the AMD vendor range of attribute numbers; ROCr does not use it. */
#define INLAY_EXECUTABLE_SYMBOL_INFO_INDIRECT_FUNCTION_SIZE ((hsa_executable_symbol_info_t)0xA100)

#endif
