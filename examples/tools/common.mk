# Rules every example tool shares. An example's Makefile sets NAME and
# includes this; `make` then builds NAME.so in the example's directory
# (NVBit's convention): the hook module NAME_hooks.hsaco, compiled by clang
# for gfx90a from hooks.hip, embedded in the tool library built from NAME.c.
#
# Override CLANG, CC or ROCM_BITCODE (ROCm's device libraries) if yours
# live elsewhere.

INLAY ?= $(abspath $(dir $(lastword $(MAKEFILE_LIST)))../..)
CLANG ?= clang-19
ROCM_BITCODE ?= /usr/lib/x86_64-linux-gnu/amdgcn/bitcode
CFLAGS ?= -O2 -g -Wall -Wextra -Werror

# Hooks: HIP device code, kept as global functions (-fgpu-rdc) in a linked
# code object, with the stack sizes the engine reads (-fstack-size-section).
HIPFLAGS := -x hip --cuda-device-only -fgpu-rdc --no-gpu-bundle-output \
            --offload-arch=gfx90a -O2 -fstack-size-section \
            --rocm-device-lib-path=$(ROCM_BITCODE) -I$(INLAY)/include

all: $(NAME).so

$(NAME)_hooks.hsaco: hooks.hip $(INLAY)/include/inlay/hooks.h
	$(CLANG) $(HIPFLAGS) hooks.hip -o $@

# The tool: its inlay_* calls stay undefined, for the runtime to resolve.
$(NAME).so: $(NAME).c $(NAME)_hooks.hsaco $(INLAY)/include/inlay/tool.h
	$(CC) $(CFLAGS) -std=gnu11 -shared -fPIC -I$(INLAY)/include $(NAME).c -o $@

clean:
	rm -f $(NAME).so $(NAME)_hooks.hsaco

.PHONY: all clean
