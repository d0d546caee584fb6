# Writes OUTPUT with `#define FLASHCORE_VERSION "<git describe>"` when it
# changed; a dirty tree also records the hash of its diff, so every distinct
# source state has its own version. Run as cmake -P at build time.
execute_process(COMMAND git describe --always --dirty --abbrev=12
  WORKING_DIRECTORY ${SOURCE_DIR} OUTPUT_VARIABLE version
  OUTPUT_STRIP_TRAILING_WHITESPACE ERROR_QUIET)
if(NOT version)
  set(version "unknown")
elseif(version MATCHES "-dirty$")
  execute_process(COMMAND git diff HEAD
    WORKING_DIRECTORY ${SOURCE_DIR} OUTPUT_VARIABLE diff ERROR_QUIET)
  string(SHA256 diff_hash "${diff}")
  string(SUBSTRING "${diff_hash}" 0 12 diff_hash)
  set(version "${version}-${diff_hash}")
endif()
set(content "#define FLASHCORE_VERSION \"${version}\"\n")
if(EXISTS ${OUTPUT})
  file(READ ${OUTPUT} old)
endif()
if(NOT "${old}" STREQUAL "${content}")
  file(WRITE ${OUTPUT} "${content}")
endif()
