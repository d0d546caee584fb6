# Writes the text of INPUT to OUTPUT as a C++ raw string literal, so that
# fmha-aot carries its C templates (templates/) without reading them at run
# time. Run as: cmake -DINPUT=... -DOUTPUT=... -P EmbedTemplate.cmake
file(READ "${INPUT}" text)
string(FIND "${text}" ")fmha_template\"" clash)
if(NOT clash EQUAL -1)
  message(FATAL_ERROR "${INPUT} holds the literal's delimiter )fmha_template\"")
endif()
file(WRITE "${OUTPUT}" "R\"fmha_template(${text})fmha_template\"\n")
