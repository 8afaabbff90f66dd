/* The exported dlsym and dlvsym. glibc resolves RTLD_NEXT and RTLD_DEFAULT relative to the
 * CALLER, found from the return address, so for those handles these stubs tail-jump to the real
 * function with the caller's return address untouched (a C wrapper would silently make every
 * RTLD_NEXT lookup relative to libvramtrace: HAMi-core PR #315). Lookups in an explicit handle do
 * not depend on the caller; they go to vt_dlsym_handle / vt_dlvsym_handle, which may substitute
 * our hook for a driver function. (dlvsym reaches a driver function only in a libcuda without a
 * version table: docs/interception.md.) */
#if defined(__x86_64__)
    .text
    .globl  dlsym
    .type   dlsym, @function
dlsym:
    .cfi_startproc
    test    %rdi, %rdi
    je      .Lreal                  /* RTLD_DEFAULT */
    cmp     $-1, %rdi
    je      .Lreal                  /* RTLD_NEXT */
    jmp     vt_dlsym_handle
.Lreal:
    mov     vt_real_dlsym_ptr(%rip), %rax
    test    %rax, %rax
    je      .Lresolve
    jmp     *%rax
.Lresolve:                          /* first call: find glibc's dlsym, keep the arguments */
    push    %rdi
    .cfi_adjust_cfa_offset 8
    push    %rsi
    .cfi_adjust_cfa_offset 8
    sub     $8, %rsp                /* 16-byte alignment for the call */
    .cfi_adjust_cfa_offset 8
    call    vt_resolve_real_dlsym
    add     $8, %rsp
    .cfi_adjust_cfa_offset -8
    pop     %rsi
    .cfi_adjust_cfa_offset -8
    pop     %rdi
    .cfi_adjust_cfa_offset -8
    test    %rax, %rax
    je      .Lfail
    jmp     *%rax
.Lfail:
    xor     %eax, %eax
    ret
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
    mov     vt_real_dlvsym_ptr(%rip), %rax
    test    %rax, %rax
    je      .Lvresolve
    jmp     *%rax
.Lvresolve:                         /* first call: find glibc's dlvsym, keep the arguments */
    push    %rdi                    /* three pushes after the return address: aligned */
    .cfi_adjust_cfa_offset 8
    push    %rsi
    .cfi_adjust_cfa_offset 8
    push    %rdx
    .cfi_adjust_cfa_offset 8
    call    vt_resolve_real_dlvsym
    pop     %rdx
    .cfi_adjust_cfa_offset -8
    pop     %rsi
    .cfi_adjust_cfa_offset -8
    pop     %rdi
    .cfi_adjust_cfa_offset -8
    test    %rax, %rax
    je      .Lvfail
    jmp     *%rax
.Lvfail:
    xor     %eax, %eax
    ret
    .cfi_endproc
    .size   dlvsym, .-dlvsym
#elif defined(__aarch64__)
    .text
    .globl  dlsym
    .type   dlsym, %function
dlsym:
    cbz     x0, 1f                  /* RTLD_DEFAULT */
    cmn     x0, #1
    b.eq    1f                      /* RTLD_NEXT */
    b       vt_dlsym_handle
1:  adrp    x16, vt_real_dlsym_ptr
    ldr     x16, [x16, :lo12:vt_real_dlsym_ptr]
    cbz     x16, 2f
    br      x16
2:  stp     x0, x1, [sp, #-32]!
    str     x30, [sp, #16]
    bl      vt_resolve_real_dlsym
    mov     x16, x0
    ldr     x30, [sp, #16]
    ldp     x0, x1, [sp], #32
    cbz     x16, 3f
    br      x16
3:  mov     x0, #0
    ret
    .size   dlsym, .-dlsym

    .globl  dlvsym
    .type   dlvsym, %function
dlvsym:                             /* (x0 handle, x1 name, x2 version) */
    cbz     x0, 1f                  /* RTLD_DEFAULT */
    cmn     x0, #1
    b.eq    1f                      /* RTLD_NEXT */
    b       vt_dlvsym_handle
1:  adrp    x16, vt_real_dlvsym_ptr
    ldr     x16, [x16, :lo12:vt_real_dlvsym_ptr]
    cbz     x16, 2f
    br      x16
2:  stp     x0, x1, [sp, #-32]!
    stp     x2, x30, [sp, #16]
    bl      vt_resolve_real_dlvsym
    mov     x16, x0
    ldp     x2, x30, [sp, #16]
    ldp     x0, x1, [sp], #32
    cbz     x16, 3f
    br      x16
3:  mov     x0, #0
    ret
    .size   dlvsym, .-dlvsym
#else
#error "dlsym_stub.S: unsupported architecture"
#endif
    .section .note.GNU-stack,"",@progbits
