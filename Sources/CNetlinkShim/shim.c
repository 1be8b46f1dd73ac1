#include "CNetlinkShim.h"
