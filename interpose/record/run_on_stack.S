/* vt_run_on_stack(fn, arg, top): calls fn(arg) with the stack pointer at `top` (16-byte aligned,
 * the high end of a stack of ours), then comes back to the caller's stack. The recorder's one-time
 * heavy work (opening the trace: configuration, the file, CUPTI's load) runs there, so a program
 * whose first memory call comes from a thread with a small stack has nothing of ours on it but
 * this frame (docs/security.md, "Stack use"). The frame pointer holds the caller's stack pointer,
 * and the CFI says so: debuggers and unwinders walk from our stack back to the program's. */
#if defined(__x86_64__)
    .text
    .globl  vt_run_on_stack
    .hidden vt_run_on_stack
    .type   vt_run_on_stack, @function
vt_run_on_stack:                    /* (fn = rdi, arg = rsi, top = rdx) */
    .cfi_startproc
    push    %rbp
    .cfi_def_cfa_offset 16
    .cfi_offset %rbp, -16
    mov     %rsp, %rbp
    .cfi_def_cfa_register %rbp
    mov     %rdx, %rsp
    mov     %rdi, %rax
    mov     %rsi, %rdi
    call    *%rax
    mov     %rbp, %rsp
    pop     %rbp
    .cfi_def_cfa %rsp, 8
    ret
    .cfi_endproc
    .size   vt_run_on_stack, .-vt_run_on_stack
#elif defined(__aarch64__)
    .text
    .globl  vt_run_on_stack
    .hidden vt_run_on_stack
    .type   vt_run_on_stack, %function
vt_run_on_stack:                    /* (fn = x0, arg = x1, top = x2) */
    .cfi_startproc
    stp     x29, x30, [sp, #-16]!
    .cfi_def_cfa_offset 16
    .cfi_offset x29, -16
    .cfi_offset x30, -8
    mov     x29, sp
    .cfi_def_cfa x29, 16
    mov     sp, x2
    mov     x3, x0
    mov     x0, x1
    blr     x3
    mov     sp, x29
    .cfi_def_cfa sp, 16
    ldp     x29, x30, [sp], #16
    .cfi_def_cfa_offset 0
    .cfi_restore x29
    .cfi_restore x30
    ret
    .cfi_endproc
    .size   vt_run_on_stack, .-vt_run_on_stack
#endif
    .section .note.GNU-stack,"",@progbits
