// Finding a function defined by another loaded object, without the loader's big lock. Owns the
// walk over the loaded objects (dl_iterate_phdr, which takes only the lock glibc holds while it
// adds or removes an object from its list, never while constructors run) and the symbol lookup
// in an object's dynamic symbol table in memory (DT_GNU_HASH, else DT_HASH).
//
// Why not dlopen(RTLD_NOLOAD) + dlsym: both take the loader lock, which a thread running a
// library constructor holds; PyTorch calls our block hooks under its allocator mutex, so a
// constructor that allocated a tensor would wait for that mutex while we wait for the loader.
#pragma once

#include <cstddef>
#include <cstdint>

namespace vt {

// False only in a child forked while another thread walked the list (dl_iterate_phdr holds a lock
// that glibc's fork leaves held in the child: loader_walks.h). The walks here then read the
// base namespace's list (_r_debug) instead, and callers that would walk it make no walk.
bool loader_list_usable();
void mark_loader_list_locked();

// The first definition of `name` (a function or object, default visibility) in load order,
// skipping the object that contains `skip` (our own library). *path gets that object's path
// (pointing into the loader's data: valid as long as the object stays loaded), *path = "" when
// none. nullptr when no loaded object defines it.
void* find_loaded_symbol(const char* name, const void* skip, const char** path);

// The first definition of `name` in the base namespace's list of loaded objects (_r_debug),
// skipping the object whose dynamic section is `skip_dynamic` (our own _DYNAMIC). Calls no
// function at all: the dlvsym stub's first call comes from sanitizer runtimes while they set up
// their interceptors, when TSan's dl_iterate_phdr and ASan's strcmp still jump through null.
void* first_definition(const char* name, const void* skip_dynamic);

// The first definition of `name` after the object whose dynamic section is `self_dynamic` in the
// base namespace's load order (what dlsym(RTLD_NEXT) gives that object), else the first one in
// another object. Calls no function, like first_definition.
void* definition_after(const char* name, const void* self_dynamic);

// Every lookup here passes over copies of libvramtrace.so (objects that define
// vramtrace_api_version): two copies in one process would otherwise find each other's exports.
// The path of such a copy loaded before (`before`) or after the object whose dynamic section is
// `self_dynamic`, or nullptr when there is none. The first in load order is the one in use.
const char* other_vramtrace(const void* self_dynamic, bool before);

// The object of the base namespace that dlopen(soname, RTLD_NOLOAD) would return (its DT_SONAME,
// or its path's last component, is `soname`; the first in load order, from _r_debug): its load
// base and dynamic section. False when none is loaded. Calls no dl* function (each resets the
// calling thread's dlerror() state: a pending error of the program's survives this).
bool find_loaded_object(const char* soname, uintptr_t* base, const void** dynamic);

// The definition of `name` in one loaded object, given its load base and dynamic section (a
// link_map's l_addr and l_ld), or nullptr. Takes no lock: the LD_AUDIT module's lookup
// (audit_module.cpp), which runs inside the loader. Every lookup here, like dlsym's, skips
// hidden versions (name@VER). A name defined as an IFUNC gives nullptr (its value is a resolver,
// not the function), with *indirect (may be null) set: only dlsym can answer for it.
void* symbol_in_object(uintptr_t base, const void* dynamic, const char* name, bool* indirect = nullptr);

}  // namespace vt
