/* ucontext: article 002's ucontext program, timed. main and one coroutine on a 64 KiB static
 * stack swap back and forth with swapcontext.
 *
 *   ucontext [BATCHES [MIN_BATCH_MS]]      see batch.h
 *
 * Changes from the article: the article's loop of N = 5,000,000 round trips in main() is the
 * function rounds(n), timed in batches by batch.h, and main() starts the coroutine as the article
 * does and then calls run_batches(). One round trip is two swapcontext calls (two switches). */
#include <ucontext.h>

#include "batch.h"

static ucontext_t main_ctx, co_ctx;
static char stack[64 * 1024];

static void co_entry(void) {
    for (;;) {
        swapcontext(&co_ctx, &main_ctx);   /* yield */
    }
}

static void rounds(long n) {
    for (long i = 0; i < n; i++)
        swapcontext(&main_ctx, &co_ctx);   /* resume */
}

int main(int argc, char **argv) {
    getcontext(&co_ctx);
    co_ctx.uc_stack.ss_sp   = stack;
    co_ctx.uc_stack.ss_size = sizeof(stack);
    co_ctx.uc_link          = &main_ctx;
    makecontext(&co_ctx, co_entry, 0);

    run_batches(argc, argv, rounds);
    return 0;
}
