/* A program that is not Python: exits 1 without output. Built dynamically linked and statically
 * linked, to stand in for interpreters whose ELF headers the tracing check reads. */
int main(void) { return 1; }
