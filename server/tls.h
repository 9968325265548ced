/* tls.h — the HTTPS listener's certificate, its reload, and client certificates (GnuTLS).
 *
 * libmicrohttpd loads a certificate given as MHD_OPTION_HTTPS_MEM_CERT once, for the daemon's
 * life. fjord gives it a certificate callback instead (MHD_OPTION_HTTPS_CERT_CALLBACK, GnuTLS's
 * retrieve function): every handshake asks this module for the certificate in force, so a
 * reload swaps it for new handshakes while connections already open keep theirs, and the
 * listening socket is never closed.
 *
 * A reload reads the files afresh and checks them whole (the chain parses, the key matches the
 * first certificate, the client CA parses) before anything is swapped: on any error the old
 * certificate stays in force. Replaced certificates are kept until fj_tls_free, since a
 * handshake in progress may still be using one (a few kilobytes for each reload).
 *
 * libmicrohttpd's certificate callback takes no context pointer, so the callback serves the one
 * fj_tls made last in the process (fjord runs one HTTPS listener). */
#ifndef FJ_TLS_H
#define FJ_TLS_H

#include "fj_status.h"

#include <gnutls/abstract.h>
#include <gnutls/gnutls.h>
#include <stdbool.h>
#include <stddef.h>

typedef struct fj_tls fj_tls;

typedef struct fj_tls_files {
    const char *cert;      /* PEM: the server certificate first, then its intermediates */
    const char *key;       /* PEM: its private key */
    const char *client_ca; /* PEM CA(s) that client certificates must chain to; NULL or "" = none asked */
} fj_tls_files;

/* TLS 1.2 and 1.3 only, AEAD ciphers with forward secrecy (GnuTLS priority string). */
#define FJ_TLS_DEFAULT_PRIORITIES                                                                          \
    "SECURE128:-VERS-ALL:+VERS-TLS1.3:+VERS-TLS1.2:-CIPHER-ALL:+AES-256-GCM:+AES-128-GCM:+CHACHA20-POLY1305:" \
    "-MAC-ALL:+AEAD:-KX-ALL:+ECDHE-ECDSA:+ECDHE-RSA:%SERVER_PRECEDENCE"

/* Loads the files (paths are copied, for reloads) and makes this the callback's source. FJ_EINVAL
 * or FJ_EIO naming the file and what is wrong with it. */
fj_status fj_tls_new(const fj_tls_files *files, fj_tls **out, fj_err *err);
void fj_tls_free(fj_tls *t);

/* Reads every file again; on success the new certificate (and client CA) serves every handshake
 * from now on. On error nothing changes. Thread-safe. */
fj_status fj_tls_reload(fj_tls *t, fj_err *err);

/* One line for the log: the certificate's subject, serial and expiry ("CN=host serial=0a1b...
 * expires=2026-01-01T00:00:00Z"). */
void fj_tls_describe(fj_tls *t, char *out, size_t cap);

/* For MHD_OPTION_HTTPS_CERT_CALLBACK. */
int fj_tls_retrieve_cert(gnutls_session_t session, const gnutls_datum_t *req_ca_dn, int n_req_ca,
                         const gnutls_pk_algorithm_t *pk_algos, int n_pk_algos, gnutls_pcert_st **pcert,
                         unsigned int *pcert_length, gnutls_privkey_t *key);

/* Whether client certificates are asked for (a client CA is configured). */
bool fj_tls_wants_client_cert(const fj_tls *t);

/* The client CA's PEM as loaded at start, for MHD_OPTION_HTTPS_MEM_TRUST, which makes
 * libmicrohttpd ask clients for a certificate; NULL when none. Verification itself is
 * fj_tls_verify_client, against the CA in force (reloaded with the certificate). */
const char *fj_tls_client_ca_pem(const fj_tls *t);

/* Checks the certificate chain the client presented on session against the client CA in force
 * (signature chain, validity dates, key usage for TLS clients). FJ_EFORBIDDEN with a message
 * saying why (none presented, not signed by the CA, expired...). */
fj_status fj_tls_verify_client(fj_tls *t, gnutls_session_t session, fj_err *err);

#endif
