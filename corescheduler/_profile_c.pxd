# Types for the compiled twin of _profile_py.py (Cython pure-Python mode).
# Every array is an array('l') seen as a C long memoryview.
cimport cython


cdef class Views:
    cdef long[::1] off, cnt, cap, T, C, M, ev_off, ev_cnt, ev_cap, ev_node, meta, tot, zs, ze
    cdef long[::1] bs, be, dirty
    cdef public long nslots


cdef class Cands:
    cdef long[::1] order, pos_of, totals, wcpu, wmem, caps, blk, out, tzs, tze, tbs, tbe
    cdef public Py_ssize_t leaves
    cdef public Py_ssize_t applied


cpdef long capacity(long free_cpus, long free_mem, long total_cpus, long cpus_per_task,
                    long mem_per_node, long mem_per_cpu, int exclusive, long ntasks_per_node)

@cython.locals(tasks=cython.long, by_mem=cython.long)
cdef inline long _capacity(long free_cpus, long free_mem, long total_cpus, long cpus_per_task,
                           long mem_per_node, long mem_per_cpu, int exclusive,
                           long ntasks_per_node) noexcept

@cython.locals(lo=cython.Py_ssize_t, hi=cython.Py_ssize_t, mid=cython.Py_ssize_t)
cdef inline Py_ssize_t segment(long[::1] T, Py_ssize_t o, Py_ssize_t n, long slot) noexcept

@cython.locals(n=cython.Py_ssize_t, nrel=cython.Py_ssize_t, nslots=cython.Py_ssize_t,
               r=cython.Py_ssize_t, i=cython.Py_ssize_t, o=cython.Py_ssize_t,
               e=cython.Py_ssize_t, k=cython.Py_ssize_t, cur_c=cython.long, cur_m=cython.long,
               s=cython.long, c=cython.long, m=cython.long, first_r=cython.Py_ssize_t)
cpdef Py_ssize_t build(long[::1] free_cpus, long[::1] free_mem, long[::1] total_cpus,
                       long[::1] total_mem, long[::1] rel_node, long[::1] rel_slot,
                       long[::1] rel_cpus, long[::1] rel_mem, long[::1] off, long[::1] cnt,
                       long[::1] cap, long[::1] T, long[::1] C, long[::1] M, long[::1] ev_off,
                       long[::1] ev_cnt, long[::1] ev_cap, long[::1] ev_node, long[::1] meta,
                       long[::1] zs,
                       long[::1] ze, long[::1] bs, long[::1] be) except -1

@cython.locals(i=cython.Py_ssize_t, r=cython.Py_ssize_t, q=cython.Py_ssize_t,
               lo=cython.Py_ssize_t, hi=cython.Py_ssize_t, a=cython.Py_ssize_t,
               b=cython.Py_ssize_t, s=cython.long, c=cython.long, m=cython.long)
cpdef void sort_releases(long[::1] rel_node, long[::1] rel_slot, long[::1] rel_cpus,
                         long[::1] rel_mem, Py_ssize_t nrel, Py_ssize_t nnodes,
                         long[::1] out_node, long[::1] out_slot, long[::1] out_cpus,
                         long[::1] out_mem, long[::1] count) noexcept

cdef void _runs(long[::1] off, long[::1] cnt, long[::1] T, long[::1] C, long[::1] tot,
                long[::1] zs, long[::1] ze, long[::1] bs, long[::1] be, Py_ssize_t node) noexcept

@cython.locals(j=cython.Py_ssize_t)
cdef inline void _first_run(long[::1] T, long[::1] C, Py_ssize_t o, Py_ssize_t n, long below,
                            long[::1] starts, long[::1] ends, Py_ssize_t node) noexcept

@cython.locals(p=cython.Py_ssize_t, v=cython.Py_ssize_t, i=cython.Py_ssize_t, a=cython.long, b=cython.long)
cpdef void tree_build(long[::1] order, Py_ssize_t count, Py_ssize_t size, long[::1] starts,
                      long[::1] ends, long[::1] ts, long[::1] te) noexcept

@cython.locals(v=cython.Py_ssize_t, a=cython.long, b=cython.long)
cpdef void tree_set(long[::1] tzs, long[::1] tze, Py_ssize_t size, Py_ssize_t pos, long zsv,
                    long zev) noexcept

@cython.locals(q=cython.Py_ssize_t, i=cython.Py_ssize_t, p=cython.Py_ssize_t)
cpdef void tree_sync(long[::1] tzs, long[::1] tze, Py_ssize_t size, long[::1] pos_of,
                     long[::1] zs, long[::1] ze, long[::1] dirty, Py_ssize_t lo,
                     Py_ssize_t hi) noexcept

@cython.locals(v=cython.Py_ssize_t)
cdef inline Py_ssize_t next_live(long[::1] tzs, long[::1] tze, Py_ssize_t size, Py_ssize_t p,
                                 long s) noexcept

@cython.locals(o=cython.Py_ssize_t, n=cython.Py_ssize_t, j=cython.Py_ssize_t,
               q=cython.Py_ssize_t, dest=cython.Py_ssize_t, e=cython.Py_ssize_t)
cdef Py_ssize_t _split(long[::1] off, long[::1] cnt, long[::1] cap, long[::1] T, long[::1] C,
                       long[::1] M, long[::1] ev_off, long[::1] ev_cnt, long[::1] ev_cap,
                       long[::1] ev_node, long[::1] meta, Py_ssize_t node, long slot) except -1

@cython.locals(o=cython.Py_ssize_t, n=cython.Py_ssize_t, slot=cython.long, q=cython.Py_ssize_t,
               e=cython.Py_ssize_t, count=cython.Py_ssize_t, h=cython.Py_ssize_t,
               k=cython.Py_ssize_t, which=cython.int)
cdef void _merge(long[::1] off, long[::1] cnt, long[::1] T, long[::1] C, long[::1] M,
                 long[::1] ev_off, long[::1] ev_cnt, long[::1] ev_node, long[::1] meta,
                 Py_ssize_t node, Py_ssize_t j) noexcept

@cython.locals(need=cython.long)
cpdef long event_room(long[::1] ev_cap, long start, long end, long nslots) except -1

cpdef int reserve(Views v, Py_ssize_t node, long start, long end, long cpus,
                  long mem) except -3

@cython.locals(n=cython.Py_ssize_t, ok=cython.int, got=cython.int)
cpdef tuple reserve_nodes(Views v, list nodes, list cpus, list mem, long start, long end,
                          long sign, Py_ssize_t k)

@cython.locals(first=cython.Py_ssize_t, stop=cython.Py_ssize_t, o=cython.Py_ssize_t,
               q=cython.Py_ssize_t, ok=cython.int)
cdef int _reserve(long[::1] off, long[::1] cnt, long[::1] cap, long[::1] T, long[::1] C,
                  long[::1] M, long[::1] ev_off, long[::1] ev_cnt, long[::1] ev_cap,
                  long[::1] ev_node, long[::1] meta, long[::1] tot, long[::1] zs, long[::1] ze, long[::1] bs,
                  long[::1] be, long[::1] dirty, Py_ssize_t node, long start, long end,
                  long cpus, long mem, long nslots) except -3

@cython.locals(lc=cython.long, lm=cython.long)
cdef inline void _run_min(long[::1] T, long[::1] C, long[::1] M, Py_ssize_t j, Py_ssize_t k,
                          long end, long nslots, long[::1] wcpu, long[::1] wmem,
                          Py_ssize_t p) noexcept

cpdef tuple window_min(Views v, Py_ssize_t node, long start, long end)

@cython.locals(o=cython.Py_ssize_t)
cdef tuple _window_min(long[::1] off, long[::1] cnt, long[::1] T, long[::1] C, long[::1] M,
                       Py_ssize_t node, long start, long end, long nslots)

@cython.locals(lc=cython.long, lm=cython.long)
cdef inline long _fill_at(long[::1] T, long[::1] C, long[::1] M, Py_ssize_t j, Py_ssize_t k,
                          long end, long nslots, long[::1] wcpu, long[::1] wmem, Py_ssize_t p,
                          long total, long cpus_per_task, long mem_per_node, long mem_per_cpu,
                          int exclusive, long ntasks_per_node) noexcept

cdef inline Py_ssize_t _next_room(long[::1] caps, long[::1] blk, Py_ssize_t p,
                                  Py_ssize_t hi) noexcept

cdef inline bint _dead(long free_cpus, long total, int exclusive) noexcept

cdef inline bint _short(long free_cpus, long total, int exclusive, long need) noexcept

@cython.locals(a=cython.Py_ssize_t, b=cython.Py_ssize_t)
cdef void _learn_run(long[::1] T, long[::1] C, Py_ssize_t o, Py_ssize_t n, Py_ssize_t j,
                     long total, int exclusive, long[::1] tzs, long[::1] tze, Py_ssize_t size,
                     Py_ssize_t p) noexcept

@cython.locals(n=cython.Py_ssize_t, count=cython.long, total=cython.long, end=cython.long,
               start_p=cython.Py_ssize_t, p=cython.Py_ssize_t, i=cython.Py_ssize_t,
               q=cython.Py_ssize_t,
               cap=cython.long, s=cython.long, r=cython.long, e=cython.Py_ssize_t,
               o=cython.Py_ssize_t, j=cython.Py_ssize_t, lc=cython.long, lm=cython.long,
               grew=cython.int, stop=cython.Py_ssize_t, need=cython.long)
cdef tuple _sweep(long[::1] off, long[::1] cnt, long[::1] T, long[::1] C, long[::1] M,
                  long[::1] ev_off, long[::1] ev_cnt, long[::1] ev_node, long nslots,
                  long[::1] order, long[::1] pos_of, long[::1] totals, long[::1] zs,
                  long[::1] ze, long[::1] tzs, long[::1] tze, Py_ssize_t size,
                  long[::1] wcpu, long[::1] wmem, long[::1] caps, long[::1] blk, long first,
                  long length, long nodes_min, long ntasks, long cpus_per_task, long ntasks_per_node, long mem_per_node,
                  long mem_per_cpu, int exclusive, int lazy, Py_ssize_t skip, long[::1] out)

cpdef tuple sweep(Views v, Cands c, long first, long length, long nodes_min, long ntasks,
                  long cpus_per_task, long ntasks_per_node, long mem_per_node, long mem_per_cpu,
                  int exclusive, int lazy, Py_ssize_t skip)

@cython.locals(got=tuple, tasks=list)
cpdef object first_fit(Cands c, list names, object deal, Py_ssize_t lo, Py_ssize_t hi,
                       long nodes_min, long nodes_max, long ntasks, long ntasks_per_node,
                       long cpus_per_task, int exclusive, long mem_per_node, long mem_per_cpu)

@cython.locals(cpus=list, mem=list, chosen_names=list, k=cython.Py_ssize_t, c=cython.long)
cdef tuple _amounts(list chosen, list tasks, list names, long[::1] totals, long[::1] pos_of,
                    long cpus_per_task, int exclusive, long mem_per_node, long mem_per_cpu)

@cython.locals(limit=cython.Py_ssize_t, chosen=list, held=list, count=cython.Py_ssize_t,
               total=cython.long, p=cython.Py_ssize_t, cap=cython.long)
cdef object _first_fit(long[::1] caps, long[::1] blk, long[::1] order, Py_ssize_t lo,
                       Py_ssize_t hi, long nodes_min, long nodes_max, long ntasks)

cpdef tuple compact(Cands c, Py_ssize_t lo, Py_ssize_t hi, long nodes_min, long ntasks)

@cython.locals(pos=list, cs=list, ms=list, ts=list, count=cython.long, total=cython.long,
               p=cython.Py_ssize_t)
cdef tuple _compact(long[::1] caps, long[::1] wcpu, long[::1] wmem, long[::1] totals,
                    Py_ssize_t lo, Py_ssize_t hi, long nodes_min, long ntasks)
