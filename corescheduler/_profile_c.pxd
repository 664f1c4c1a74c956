# Types for the compiled twin of _profile_py.py (Cython pure-Python mode).
cimport cython

@cython.locals(tasks=cython.long, by_mem=cython.long)
cpdef long capacity(long free_cpus, long free_mem, long total_cpus, long cpus_per_task,
                    long mem_per_node, long mem_per_cpu, int exclusive, long ntasks_per_node)

@cython.locals(lo=cython.Py_ssize_t, hi=cython.Py_ssize_t, mid=cython.Py_ssize_t)
cpdef Py_ssize_t segment(list t, long slot)

@cython.locals(n=cython.Py_ssize_t, nrel=cython.Py_ssize_t, r=cython.Py_ssize_t,
               i=cython.Py_ssize_t, cur_c=cython.long, cur_m=cython.long, s=cython.long,
               last=cython.long, t=list, c=list, m=list, bt=list, bc=list, bm=list,
               events=list)
cpdef tuple build(list free_cpus, list free_mem, list rel_node, list rel_slot, list rel_cpus,
                  list rel_mem, long nslots)

@cython.locals(j=cython.Py_ssize_t)
cdef Py_ssize_t _split(list t, list c, list m, list events, long node, long slot) except -1

@cython.locals(t=list, c=list, m=list, first=cython.Py_ssize_t, stop=cython.Py_ssize_t,
               q=cython.Py_ssize_t, ok=cython.int)
cpdef int reserve(list bt, list bc, list bm, list events, long node, long start, long end,
                  long cpus, long mem, long nslots) except -1

@cython.locals(j=cython.Py_ssize_t, k=cython.Py_ssize_t, lc=cython.long, lm=cython.long)
cpdef tuple window_min(list t, list c, list m, long start, long end, long nslots)

@cython.locals(n=cython.Py_ssize_t, caps=list, count=cython.long, total=cython.long,
               end=cython.long, p=cython.Py_ssize_t, i=cython.Py_ssize_t, lc=cython.long,
               lm=cython.long, cap=cython.long, s=cython.long, r=cython.long,
               entering=list, leaving=list, q=cython.Py_ssize_t, t=list, j=cython.Py_ssize_t,
               grew=cython.int, cr=list, mr=list)
cpdef tuple sweep(list bt, list bc, list bm, list events, long nslots, list order, list pos_of,
                  list totals, list wcpu, list wmem, long first, long length,
                  long nodes_min, long ntasks, long cpus_per_task, long ntasks_per_node,
                  long mem_per_node, long mem_per_cpu, int exclusive, int lazy)

@cython.locals(j=cython.Py_ssize_t, k=cython.Py_ssize_t, lc=cython.long, lm=cython.long)
cdef long _fill(list t, list c, list m, long start, long end, long nslots, list wcpu, list wmem,
                Py_ssize_t p, long total, long cpus_per_task, long mem_per_node, long mem_per_cpu,
                int exclusive, long ntasks_per_node) except -1
