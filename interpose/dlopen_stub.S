/* The exported dlopen and dlmopen. glibc finds the caller from the return address (its RUNPATH
 * and $ORIGIN, its namespace), so these stubs tail-jump to the real function with the caller's
 * return address untouched, as dlsym_stub.S does. The fast path (a plain dlopen once the real one
 * is known) is a flag test and an indirect jump; the slow path calls dlopen_hook.cpp, which finds
 * the real function and notes an open out of the hooks' reach (RTLD_DEEPBIND = 0x8, or dlmopen
 * into a namespace other than LM_ID_BASE = 0), then jumps with the arguments restored. */
#if defined(__x86_64__)
    .text
    .globl  dlopen
    .type   dlopen, @function
dlopen:                             /* (const char* file = rdi, int mode = esi) */
    .cfi_startproc
    test    $0x8, %esi
    jnz     .Lopen_slow
    mov     vt_real_dlopen_ptr(%rip), %rax
    test    %rax, %rax
    je      .Lopen_slow
    jmp     *%rax
.Lopen_slow:
    push    %rdi
    .cfi_adjust_cfa_offset 8
    push    %rsi
    .cfi_adjust_cfa_offset 8
    sub     $8, %rsp                /* 16-byte alignment for the call */
    .cfi_adjust_cfa_offset 8
    call    vt_dlopen_slow
    add     $8, %rsp
    .cfi_adjust_cfa_offset -8
    pop     %rsi
    .cfi_adjust_cfa_offset -8
    pop     %rdi
    .cfi_adjust_cfa_offset -8
    test    %rax, %rax
    je      .Lopen_fail
    jmp     *%rax
.Lopen_fail:
    xor     %eax, %eax
    ret
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
    mov     vt_real_dlmopen_ptr(%rip), %rax
    test    %rax, %rax
    je      .Lmopen_slow
    jmp     *%rax
.Lmopen_slow:
    push    %rdi                    /* three pushes after the return address: aligned */
    .cfi_adjust_cfa_offset 8
    push    %rsi
    .cfi_adjust_cfa_offset 8
    push    %rdx
    .cfi_adjust_cfa_offset 8
    call    vt_dlmopen_slow
    pop     %rdx
    .cfi_adjust_cfa_offset -8
    pop     %rsi
    .cfi_adjust_cfa_offset -8
    pop     %rdi
    .cfi_adjust_cfa_offset -8
    test    %rax, %rax
    je      .Lmopen_fail
    jmp     *%rax
.Lmopen_fail:
    xor     %eax, %eax
    ret
    .cfi_endproc
    .size   dlmopen, .-dlmopen
#elif defined(__aarch64__)
    .text
    .globl  dlopen
    .type   dlopen, %function
dlopen:                             /* (x0 file, w1 mode) */
    tbnz    w1, #3, 1f              /* RTLD_DEEPBIND */
    adrp    x16, vt_real_dlopen_ptr
    ldr     x16, [x16, :lo12:vt_real_dlopen_ptr]
    cbz     x16, 1f
    br      x16
1:  stp     x0, x1, [sp, #-32]!
    str     x30, [sp, #16]
    bl      vt_dlopen_slow
    mov     x16, x0
    ldr     x30, [sp, #16]
    ldp     x0, x1, [sp], #32
    cbz     x16, 2f
    br      x16
2:  mov     x0, #0
    ret
    .size   dlopen, .-dlopen

    .globl  dlmopen
    .type   dlmopen, %function
dlmopen:                            /* (x0 lmid, x1 file, w2 mode) */
    cbnz    x0, 1f
    tbnz    w2, #3, 1f
    adrp    x16, vt_real_dlmopen_ptr
    ldr     x16, [x16, :lo12:vt_real_dlmopen_ptr]
    cbz     x16, 1f
    br      x16
1:  stp     x0, x1, [sp, #-32]!
    stp     x2, x30, [sp, #16]
    bl      vt_dlmopen_slow
    mov     x16, x0
    ldp     x2, x30, [sp, #16]
    ldp     x0, x1, [sp], #32
    cbz     x16, 2f
    br      x16
2:  mov     x0, #0
    ret
    .size   dlmopen, .-dlmopen
#else
#error "dlopen_stub.S: unsupported architecture"
#endif
    .section .note.GNU-stack,"",@progbits
