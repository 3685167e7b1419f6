/* Descriptors for client connections, one budget for the whole process
 * (issue 29): the Kafka listeners and the HTTP servers take a descriptor from
 * it before they accept, and give it back when the connection closes. The
 * budget is the descriptor limit less a reserve (a quarter of the limit, at
 * most 256) that clients can never take: the object and metadata stores,
 * WAL and table files and the listeners themselves open their descriptors
 * from the reserve, so a store write never fails with EMFILE because clients
 * hold every descriptor.
 *
 * Threads: any; a lock-free counter. The limit is read once, at the first
 * call (after main has raised the soft limit). */
#ifndef LS_BASE_FD_BUDGET_H
#define LS_BASE_FD_BUDGET_H
#include <stdbool.h>
#include <stdint.h>

/* Client connections the descriptor limit allows, all listeners together. */
int64_t ls_fd_budget_total(void);
/* Takes one descriptor for a connection about to be accepted; false when
 * the budget is spent (leave the connection in the listen backlog). */
bool ls_fd_budget_take(void);
/* Gives back one taken by ls_fd_budget_take (the connection closed). */
void ls_fd_budget_give(void);
/* Client descriptors taken now (for diagnostics). */
int64_t ls_fd_budget_used(void);
#endif
