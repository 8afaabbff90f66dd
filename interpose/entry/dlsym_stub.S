/* The exported dlsym and dlvsym. glibc resolves RTLD_NEXT and RTLD_DEFAULT relative to the
 * CALLER, found from the return address, so for those handles these stubs tail-jump to the real
 * function with the caller's return address untouched (a C wrapper would silently make every
 * RTLD_NEXT lookup relative to libvramtrace: HAMi-core PR #315). Lookups in an explicit handle do
 * not depend on the caller; they go to vt_dlsym_handle / vt_dlvsym_handle, which may substitute
 * our hook for a driver function. (dlvsym reaches a driver function only in a libcuda without a
 * version table: docs/interception.md.) The first call finds glibc's function (driver_api.cpp). */
#include "tail_jump.inc"

#if defined(__x86_64__)
    .text
    .globl  dlsym
    .type   dlsym, @function
dlsym:                              /* (handle = rdi, name = rsi) */
    .cfi_startproc
    test    %rdi, %rdi
    je      .Lreal                  /* RTLD_DEFAULT */
    cmp     $-1, %rdi
    je      .Lreal                  /* RTLD_NEXT */
    jmp     vt_dlsym_handle
.Lreal:
    VT_JUMP_THROUGH vt_real_dlsym_ptr, .Lresolve
.Lresolve:
    VT_CALL_THEN_JUMP vt_resolve_real_dlsym, 2
    .cfi_endproc
    .size   dlsym, .-dlsym

    .globl  dlvsym
    .type   dlvsym, @function
dlvsym:                             /* (handle = rdi, name = rsi, version = rdx) */
    .cfi_startproc
    test    %rdi, %rdi
    je      .Lvreal                 /* RTLD_DEFAULT */
    cmp     $-1, %rdi
    je      .Lvreal                 /* RTLD_NEXT */
    jmp     vt_dlvsym_handle
.Lvreal:
    VT_JUMP_THROUGH vt_real_dlvsym_ptr, .Lvresolve
.Lvresolve:
    VT_CALL_THEN_JUMP vt_resolve_real_dlvsym, 3
    .cfi_endproc
    .size   dlvsym, .-dlvsym
#elif defined(__aarch64__)
    .text
    .globl  dlsym
    .type   dlsym, %function
dlsym:                              /* (x0 handle, x1 name) */
    cbz     x0, .Lreal              /* RTLD_DEFAULT */
    cmn     x0, #1
    b.eq    .Lreal                  /* RTLD_NEXT */
    b       vt_dlsym_handle
.Lreal:
    VT_JUMP_THROUGH vt_real_dlsym_ptr, .Lresolve
.Lresolve:
    VT_CALL_THEN_JUMP vt_resolve_real_dlsym, 2
    .size   dlsym, .-dlsym

    .globl  dlvsym
    .type   dlvsym, %function
dlvsym:                             /* (x0 handle, x1 name, x2 version) */
    cbz     x0, .Lvreal             /* RTLD_DEFAULT */
    cmn     x0, #1
    b.eq    .Lvreal                 /* RTLD_NEXT */
    b       vt_dlvsym_handle
.Lvreal:
    VT_JUMP_THROUGH vt_real_dlvsym_ptr, .Lvresolve
.Lvresolve:
    VT_CALL_THEN_JUMP vt_resolve_real_dlvsym, 3
    .size   dlvsym, .-dlvsym
#endif
    .section .note.GNU-stack,"",@progbits
