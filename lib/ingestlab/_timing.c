/*
 * ingestlab._timing — the C half of ingestlab.timing: the per-statement loop, without Python in it.
 *
 * The lab's timed loops send finished statement texts on one connection and read the clock
 * around each.  Written in Python, every statement also pays the interpreter's loop (a few
 * microseconds of client CPU); the engines' own C clients (pgbench, mariadb-slap) pay none of
 * it.  These loops do what those clients do per statement -- read the clock, send the text with
 * the client library's lowest-level call, read the reply, read the clock -- with the GIL released.
 *
 * The client library is not linked here: the caller passes the addresses of its functions
 * (resolved with ctypes from the driver that opened the connection, so the library that owns
 * the connection is the one called) and the connection's pointer.  Two kinds of sender:
 *
 *   KIND_LIBPQ    PQexec, PQresultStatus, PQclear                       (PostgreSQL, libpq)
 *   KIND_LIBMYSQL mysql_real_query, mysql_field_count, mysql_store_result,
 *                 mysql_free_result                                     (MariaDB/MySQL)
 *
 * The clock is CLOCK_MONOTONIC, the clock of Python's time.perf_counter_ns on Linux, so the
 * readings are comparable with every other reading of ingestlab.timing.
 *
 * Nothing else may use the connection while a loop runs (the GIL is released).
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>

#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

enum { KIND_LIBPQ = 1, KIND_LIBMYSQL = 2 };

/* libpq's PGRES_COMMAND_OK and PGRES_TUPLES_OK: a statement that succeeded */
enum { PGRES_COMMAND_OK = 1, PGRES_TUPLES_OK = 2 };

typedef void *(*pq_exec_fn)(void *, const char *);
typedef int (*pq_status_fn)(const void *);
typedef void (*pq_clear_fn)(void *);
typedef int (*my_query_fn)(void *, const char *, unsigned long);
typedef unsigned int (*my_field_count_fn)(void *);
typedef void *(*my_store_fn)(void *);
typedef void (*my_free_fn)(void *);

typedef struct {
    int kind;
    void *conn;
    void *fn[4];
} sender;

static inline int64_t
now_ns(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (int64_t)t.tv_sec * 1000000000LL + t.tv_nsec;
}

static void
sleep_until(int64_t deadline_ns)
{
    struct timespec t = {(time_t)(deadline_ns / 1000000000LL), (long)(deadline_ns % 1000000000LL)};
    while (clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &t, NULL) == EINTR) {
    }
}

/* Send one text and read the reply; 0 when the server accepted it, -1 otherwise. */
static inline int
send_text(const sender *s, const char *text, size_t len)
{
    if (s->kind == KIND_LIBPQ) {
        void *result = ((pq_exec_fn)s->fn[0])(s->conn, text);
        if (result == NULL)
            return -1;
        int status = ((pq_status_fn)s->fn[1])(result);
        ((pq_clear_fn)s->fn[2])(result);
        return (status == PGRES_COMMAND_OK || status == PGRES_TUPLES_OK) ? 0 : -1;
    }
    if (((my_query_fn)s->fn[0])(s->conn, text, (unsigned long)len) != 0)
        return -1;
    if (((my_field_count_fn)s->fn[1])(s->conn) != 0) { /* a result set: read it, as mariadb-slap does */
        void *result = ((my_store_fn)s->fn[2])(s->conn);
        if (result == NULL)
            return -1;
        ((my_free_fn)s->fn[3])(result);
    }
    return 0;
}

/* sender = (kind, connection address, function addresses...); a PyArg_ParseTuple "O&" converter: 1 when
 * ``spec`` filled ``*out``, else 0 with an exception set. */
static int
sender_arg(PyObject *spec, void *out)
{
    sender *s = out;
    if (!PyTuple_Check(spec) || PyTuple_GET_SIZE(spec) < 2) {
        PyErr_SetString(PyExc_TypeError, "sender must be a tuple (kind, connection, functions...)");
        return 0;
    }
    s->kind = (int)PyLong_AsLong(PyTuple_GET_ITEM(spec, 0));
    if (s->kind == -1 && PyErr_Occurred())
        return 0;
    Py_ssize_t want = s->kind == KIND_LIBPQ ? 3 : s->kind == KIND_LIBMYSQL ? 4 : -1;
    if (want < 0) {
        PyErr_Format(PyExc_ValueError, "unknown sender kind %d", s->kind);
        return 0;
    }
    if (PyTuple_GET_SIZE(spec) != 2 + want) {
        PyErr_Format(PyExc_ValueError, "a sender of kind %d takes %zd function addresses", s->kind, want);
        return 0;
    }
    memset(s->fn, 0, sizeof s->fn);
    for (Py_ssize_t i = 0; i < 1 + want; i++) {
        void *p = PyLong_AsVoidPtr(PyTuple_GET_ITEM(spec, 1 + i));
        if (p == NULL) {
            if (!PyErr_Occurred())
                PyErr_SetString(PyExc_ValueError, "sender: a null connection or function address");
            return 0;
        }
        if (i == 0)
            s->conn = p;
        else
            s->fn[i - 1] = p;
    }
    return 1;
}

/* ``arg``'s items as a new tuple of bytes, or NULL with an exception set (TypeError naming ``what``'s first
 * item that is not bytes). */
static PyObject *
bytes_tuple(PyObject *arg, const char *what)
{
    PyObject *items = PySequence_Tuple(arg);
    if (items == NULL)
        return NULL;
    for (Py_ssize_t i = 0; i < PyTuple_GET_SIZE(items); i++) {
        PyObject *t = PyTuple_GET_ITEM(items, i);
        if (!PyBytes_Check(t)) {
            PyErr_Format(PyExc_TypeError, "%s[%zd] is %.80s, not bytes", what, i, Py_TYPE(t)->tp_name);
            Py_DECREF(items);
            return NULL;
        }
    }
    return items;
}

static int
int64_buffer(PyObject *obj, Py_buffer *view)
{
    if (PyObject_GetBuffer(obj, view, PyBUF_WRITABLE | PyBUF_FORMAT | PyBUF_C_CONTIGUOUS) < 0)
        return -1;
    if (view->itemsize != 8 || view->format == NULL || strchr("qlQL", view->format[strlen(view->format) - 1]) == NULL) {
        PyErr_SetString(PyExc_TypeError, "stamps must be a writable buffer of 64-bit integers");
        PyBuffer_Release(view);
        return -1;
    }
    return 0;
}

PyDoc_STRVAR(time_texts_doc,
"time_texts(sender, texts, stamps) -> int\n\n"
"Send each of ``texts`` (bytes) in order; ``stamps[2i]`` and ``stamps[2i + 1]`` get the clock's\n"
"readings before and after statement ``i``.  Returns how many the server accepted: fewer than\n"
"``len(texts)`` means the next one failed (its readings are stored too) and the loop stopped.");

static PyObject *
time_texts(PyObject *self, PyObject *args)
{
    sender s;
    PyObject *texts_arg, *stamps_arg;
    if (!PyArg_ParseTuple(args, "O&OO:time_texts", sender_arg, &s, &texts_arg, &stamps_arg))
        return NULL;
    PyObject *texts = bytes_tuple(texts_arg, "texts"); /* holds every text while the GIL is released */
    if (texts == NULL)
        return NULL;
    Py_ssize_t n = PyTuple_GET_SIZE(texts);
    const char **ptrs = PyMem_Malloc((size_t)(n ? n : 1) * sizeof *ptrs);
    Py_ssize_t *lens = PyMem_Malloc((size_t)(n ? n : 1) * sizeof *lens);
    Py_buffer view = {0};
    PyObject *out = NULL;
    if (ptrs == NULL || lens == NULL) {
        PyErr_NoMemory();
        goto done;
    }
    for (Py_ssize_t i = 0; i < n; i++) {
        PyObject *t = PyTuple_GET_ITEM(texts, i);
        ptrs[i] = PyBytes_AS_STRING(t); /* NUL-terminated, as PQexec wants */
        lens[i] = PyBytes_GET_SIZE(t);
    }
    if (int64_buffer(stamps_arg, &view) < 0)
        goto done;
    if (view.len / 8 < 2 * n) {
        PyErr_Format(PyExc_ValueError, "stamps holds %zd readings; %zd statements need %zd", view.len / 8, n, 2 * n);
        PyBuffer_Release(&view);
        goto done;
    }
    int64_t *stamps = view.buf;
    Py_ssize_t i = 0;
    Py_BEGIN_ALLOW_THREADS
    for (; i < n; i++) {
        stamps[2 * i] = now_ns();
        int rc = send_text(&s, ptrs[i], (size_t)lens[i]);
        stamps[2 * i + 1] = now_ns();
        if (rc != 0)
            break;
    }
    Py_END_ALLOW_THREADS
    PyBuffer_Release(&view);
    out = PyLong_FromSsize_t(i);
done:
    PyMem_Free(ptrs);
    PyMem_Free(lens);
    Py_DECREF(texts);
    return out;
}

PyDoc_STRVAR(stamp_template_doc,
"stamp_template(sender, parts, first_id, stamps, until_ns, first_ns, interval_ns) -> int\n\n"
"The loop of a concurrent client (ingestlab.timing.stamp_statements, in C).  Statement ``k``\n"
"(counted over the client's life: ``stamps[1] + stamps[0]``) is ``parts`` joined by its ids\n"
"``first_id + k * m + j`` (``m = len(parts) - 1``, ``j = 0 .. m - 1``), made before its clock\n"
"starts.  ``stamps`` is ``[count, first statement number, (intended, started, ended) * capacity]``;\n"
"``count`` is stored after each statement.  Closed loop (``interval_ns`` 0): the next statement\n"
"starts when one returns; open loop: statement ``k`` waits for ``first_ns + k * interval_ns``.\n"
"Returns 1 when the time is up (no statement starts, or is intended, at or after ``until_ns``),\n"
"0 when ``stamps`` is full, -1 when the server refused a statement (not counted).");

static PyObject *
stamp_template(PyObject *self, PyObject *args)
{
    sender s;
    PyObject *parts_arg, *stamps_arg;
    long long first_id, until_ns, first_ns, interval_ns;
    if (!PyArg_ParseTuple(args, "O&OLOLLL:stamp_template", sender_arg, &s, &parts_arg, &first_id, &stamps_arg,
                          &until_ns, &first_ns, &interval_ns))
        return NULL;
    PyObject *parts = bytes_tuple(parts_arg, "parts");
    if (parts == NULL)
        return NULL;
    Py_ssize_t n_parts = PyTuple_GET_SIZE(parts), fixed = 0;
    PyObject *out = NULL;
    char *text = NULL;
    Py_buffer view = {0};
    if (n_parts < 2) {
        PyErr_SetString(PyExc_ValueError, "parts: at least two (the text before and after an id)");
        goto done;
    }
    for (Py_ssize_t j = 0; j < n_parts; j++)
        fixed += PyBytes_GET_SIZE(PyTuple_GET_ITEM(parts, j));
    Py_ssize_t m = n_parts - 1, room = fixed + m * 24 + 1;
    text = PyMem_Malloc((size_t)room);
    if (text == NULL) {
        PyErr_NoMemory();
        goto done;
    }
    if (int64_buffer(stamps_arg, &view) < 0)
        goto done;
    if (view.len / 8 < 2) {
        PyErr_SetString(PyExc_ValueError, "stamps needs its two header slots (count, first statement number)");
        PyBuffer_Release(&view);
        goto done;
    }
    int64_t *stamps = view.buf;
    Py_ssize_t capacity = (view.len / 8 - 2) / 3;
    int64_t n = stamps[0], k = stamps[1] + stamps[0];
    int result = 0;
    Py_BEGIN_ALLOW_THREADS
    while (n < capacity) {
        int64_t intended = 0, started;
        if (interval_ns > 0) {
            intended = first_ns + k * interval_ns;
            if (intended >= until_ns) {
                result = 1;
                break;
            }
            sleep_until(intended);
        }
        char *p = text;
        for (Py_ssize_t j = 0; j < n_parts; j++) {
            PyObject *part = PyTuple_GET_ITEM(parts, j);
            memcpy(p, PyBytes_AS_STRING(part), (size_t)PyBytes_GET_SIZE(part));
            p += PyBytes_GET_SIZE(part);
            if (j < m)
                p += snprintf(p, 24, "%lld", (long long)(first_id + k * m + j));
        }
        *p = '\0';
        started = now_ns();
        if (interval_ns <= 0) {
            intended = started;
            if (started >= until_ns) {
                result = 1;
                break;
            }
        }
        if (send_text(&s, text, (size_t)(p - text)) != 0) {
            result = -1;
            break;
        }
        int64_t *slot = stamps + 2 + 3 * n;
        slot[2] = now_ns();
        slot[0] = intended;
        slot[1] = started;
        n++;
        k++;
        __atomic_store_n(&stamps[0], n, __ATOMIC_RELEASE); /* the parent may read the buffer at any time */
    }
    Py_END_ALLOW_THREADS
    PyBuffer_Release(&view);
    out = PyLong_FromLong(result);
done:
    PyMem_Free(text);
    Py_DECREF(parts);
    return out;
}

static PyObject *
clock_ns(PyObject *self, PyObject *unused)
{
    return PyLong_FromLongLong(now_ns());
}

static PyMethodDef methods[] = {
    {"time_texts", time_texts, METH_VARARGS, time_texts_doc},
    {"stamp_template", stamp_template, METH_VARARGS, stamp_template_doc},
    {"clock_ns", clock_ns, METH_NOARGS, "The loops' clock (CLOCK_MONOTONIC) in nanoseconds."},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module = {
    PyModuleDef_HEAD_INIT, "ingestlab._timing",
    "The C half of ingestlab.timing: per-statement loops with the GIL released (see _timing.c).", -1, methods,
};

PyMODINIT_FUNC
PyInit__timing(void)
{
    return PyModule_Create(&module);
}
