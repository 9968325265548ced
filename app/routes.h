/* app/routes.h — the table of every HTTP endpoint fjord serves, handed to fj_server_start by
 * main.c. One place to read them all. */
#ifndef FJ_ROUTES_H
#define FJ_ROUTES_H

#include "server/http.h"

extern const fj_route fj_routes[];

#endif
