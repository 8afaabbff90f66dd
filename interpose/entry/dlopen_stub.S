/* The exported dlopen and dlmopen. glibc finds the caller from the return address (its RUNPATH
 * and $ORIGIN, its namespace), so these stubs tail-jump to the real function with the caller's
 * return address untouched, as dlsym_stub.S does. The fast path (a plain dlopen once the real one
 * is known) is a flag test and an indirect jump; the slow path calls dlopen_hook.cpp, which finds
 * the real function and notes an open out of the hooks' reach (RTLD_DEEPBIND = 0x8, or dlmopen
 * into a namespace other than LM_ID_BASE = 0), then jumps with the arguments restored. */
#include "tail_jump.inc"

#if defined(__x86_64__)
    .text
    .globl  dlopen
    .type   dlopen, @function
dlopen:                             /* (const char* file = rdi, int mode = esi) */
    .cfi_startproc
    test    $0x8, %esi
    jnz     .Lopen_slow
    VT_JUMP_THROUGH vt_real_dlopen_ptr, .Lopen_slow
.Lopen_slow:
    VT_CALL_THEN_JUMP vt_dlopen_slow, 2
    .cfi_endproc
    .size   dlopen, .-dlopen

    .globl  dlmopen
    .type   dlmopen, @function
dlmopen:                            /* (Lmid_t lmid = rdi, const char* file = rsi, int mode = edx) */
    .cfi_startproc
    test    %rdi, %rdi
    jne     .Lmopen_slow
    test    $0x8, %edx
    jnz     .Lmopen_slow
    VT_JUMP_THROUGH vt_real_dlmopen_ptr, .Lmopen_slow
.Lmopen_slow:
    VT_CALL_THEN_JUMP vt_dlmopen_slow, 3
    .cfi_endproc
    .size   dlmopen, .-dlmopen
#elif defined(__aarch64__)
    .text
    .globl  dlopen
    .type   dlopen, %function
dlopen:                             /* (x0 file, w1 mode) */
    tbnz    w1, #3, .Lopen_slow     /* RTLD_DEEPBIND */
    VT_JUMP_THROUGH vt_real_dlopen_ptr, .Lopen_slow
.Lopen_slow:
    VT_CALL_THEN_JUMP vt_dlopen_slow, 2
    .size   dlopen, .-dlopen

    .globl  dlmopen
    .type   dlmopen, %function
dlmopen:                            /* (x0 lmid, x1 file, w2 mode) */
    cbnz    x0, .Lmopen_slow
    tbnz    w2, #3, .Lmopen_slow
    VT_JUMP_THROUGH vt_real_dlmopen_ptr, .Lmopen_slow
.Lmopen_slow:
    VT_CALL_THEN_JUMP vt_dlmopen_slow, 3
    .size   dlmopen, .-dlmopen
#endif
    .section .note.GNU-stack,"",@progbits
