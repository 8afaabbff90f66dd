# Writes the man page and completions from the CLI's own definition (tools/cli_docs.h):
#   cmake -DCLI=<vramtrace> -DOUT=<dir> -P cli_docs.cmake
# OUT/man/man1/vramtrace.1, OUT/bash-completion/completions/vramtrace, OUT/zsh/site-functions/_vramtrace
foreach(pair "--generate-man;man/man1/vramtrace.1" "--generate-completion bash;bash-completion/completions/vramtrace"
             "--generate-completion zsh;zsh/site-functions/_vramtrace")
  list(GET pair 0 args)
  list(GET pair 1 file)
  separate_arguments(args)
  get_filename_component(dir "${OUT}/${file}" DIRECTORY)
  file(MAKE_DIRECTORY "${dir}")
  execute_process(COMMAND "${CLI}" ${args} OUTPUT_FILE "${OUT}/${file}.tmp" RESULT_VARIABLE rc)
  if(NOT rc EQUAL 0)
    message(FATAL_ERROR "${CLI} ${args} failed (${rc})")
  endif()
  file(RENAME "${OUT}/${file}.tmp" "${OUT}/${file}")
endforeach()
