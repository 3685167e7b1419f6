#include "base/status.h"

const char *ls_status_str(ls_status st)
{
    switch (st) {
    case LS_OK: return "ok";
    case LS_EAGAIN: return "temporarily unavailable";
    case LS_ENOTFOUND: return "not found";
    case LS_EEXISTS: return "already exists";
    case LS_ECONFLICT: return "conflict (concurrent update)";
    case LS_EIO: return "i/o error";
    case LS_ECORRUPT: return "corrupt data";
    case LS_EINVAL: return "invalid argument";
    case LS_ENOSPC: return "no space left in store";
    case LS_EFENCED: return "fenced";
    case LS_ERANGE: return "out of range";
    case LS_ELIMIT: return "limit exceeded";
    case LS_ESHUTDOWN: return "shutting down";
    }
    return "unknown status";
}
