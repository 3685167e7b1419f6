/* The broker's settings table (settings.c): every key the broker reads, its
 * default, bounds and help, and the Kafka names it refuses. The composition
 * root hands it to the parser (ls_config_init); the command line's offline
 * commands get it from main. */
#ifndef LS_SERVER_SETTINGS_H
#define LS_SERVER_SETTINGS_H
#include "base/config.h"

extern const ls_config_schema_t ls_broker_settings;
#endif
