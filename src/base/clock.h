#ifndef LS_CLOCK_H
#define LS_CLOCK_H
#include <stdint.h>
int64_t ls_clock_mono_ms(void); /* monotonic, for timeouts */
int64_t ls_clock_mono_us(void);
int64_t ls_clock_wall_ms(void); /* unix epoch ms, for timestamps */
#endif
