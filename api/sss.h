/* sss.h — nodes exported as SSS Node objects (Scalable Systems Software Node Object
 * Specification 3.1.0) in XML: docs/sss.md. */
#ifndef FJ_API_SSS_H
#define FJ_API_SSS_H

#include "buf.h"
#include "server/http.h"
#include "api/spec.h"

/* GET /api/v1/export/sss/nodes?cluster=[&host=&partition=&state=&aggregation=Range|List]: the
 * nodes as an SSSRMAP response (Envelope/Body/Response with Status, Count and Data) holding one
 * Node object each; with aggregation, Node references naming them instead: Range, one per prefix
 * (<Node aggregation="Range" count="20">node[5-23,77]</Node>, from fj_noderange_compress); List,
 * one comma list. GET .../nodes/{node}?cluster=: one
 * Node object (404 when the cluster has no such node). */
void fj_api_sss_nodes(fj_http_req *r);
void fj_api_sss_node(fj_http_req *r);

/* Appends s as XML character data or attribute text: &, <, >, " and ' escaped; bytes that are not
 * UTF-8 and characters XML 1.0 does not allow (controls other than tab, LF and CR; U+FFFE,
 * U+FFFF) written as U+FFFD, so that any stored string gives well-formed XML. */
fj_status fj_xml_escape(fj_buf *b, const char *s);

/* The endpoints, for the OpenAPI document (NULL-terminated). */
extern const fj_endpoint *const fj_sss_endpoints[];

#endif
