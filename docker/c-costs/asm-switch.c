/* asm-switch: article 002's hand-written stackful coroutine, timed. co_switch saves the six
 * callee-saved registers on the current stack, stores rsp, loads the other side's rsp and pops its
 * registers; a new coroutine starts from a fake initial frame: a placeholder return address, the
 * entry function's address and six zeros for the "saved" registers, so that co_switch's ret jumps
 * into the entry function.
 *
 *   asm-switch [BATCHES [MIN_BATCH_MS]]    see batch.h
 *
 * x86-64 System V only. The article's co_switch is kept instruction for instruction; the
 * assembly gains the directives that place it in .text, aligned, as a function. The coroutine's
 * stack is 64 KiB, as the ucontext program's. One round trip is two co_switch calls (two
 * switches). */
#include <stdint.h>

#include "batch.h"

void co_switch(void **save_sp, void *new_sp);

__asm__(
".text\n"
".p2align 4\n"
".type co_switch, @function\n"
"co_switch:\n"
"  push %rbp\n"
"  push %rbx\n"
"  push %r12\n"
"  push %r13\n"
"  push %r14\n"
"  push %r15\n"
"  mov  %rsp, (%rdi)\n"      /* *save_sp = rsp  */
"  mov  %rsi, %rsp\n"        /* rsp = new_sp    */
"  pop  %r15\n"
"  pop  %r14\n"
"  pop  %r13\n"
"  pop  %r12\n"
"  pop  %rbx\n"
"  pop  %rbp\n"
"  ret\n"
".size co_switch, .-co_switch\n"
);

static void *main_sp, *co_sp;
static _Alignas(16) char stack[64 * 1024];

static void co_entry(void) {
    for (;;)
        co_switch(&co_sp, main_sp);        /* yield */
}

/* The fake initial frame. The placeholder sits where a call would have left its return address,
 * so at co_entry's first instruction rsp + 8 is 16-byte aligned, as the ABI requires. */
static void *co_init(char *stack_base, size_t size, void (*entry)(void)) {
    uintptr_t *sp = (uintptr_t *)(((uintptr_t)stack_base + size) & ~(uintptr_t)15);
    *--sp = 0;                             /* return address placeholder */
    *--sp = (uintptr_t)entry;              /* co_switch's ret jumps here */
    for (int i = 0; i < 6; i++)
        *--sp = 0;                         /* rbp, rbx, r12-r15 */
    return sp;
}

static void rounds(long n) {
    for (long i = 0; i < n; i++)
        co_switch(&main_sp, co_sp);        /* resume */
}

int main(int argc, char **argv) {
    co_sp = co_init(stack, sizeof(stack), co_entry);
    run_batches(argc, argv, rounds);
    return 0;
}
