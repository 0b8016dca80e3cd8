# The D-Bus contract's names (dbus/names.h: header-only, D-Bus strings only, nothing else
# linked) and the decoding of the options dictionaries into the engine's typed options: the
# service's, in a library of their own so that cpuctl and the options fuzzer use them without
# sdbus-c++.
add_library(cpuhpd_names INTERFACE)
target_include_directories(cpuhpd_names INTERFACE ${PROJECT_SOURCE_DIR}/dbus)

add_library(cpuhpd_options STATIC ${CMAKE_CURRENT_LIST_DIR}/option_dictionary.cpp)
target_include_directories(cpuhpd_options PUBLIC ${CMAKE_CURRENT_LIST_DIR})
target_link_libraries(cpuhpd_options PUBLIC cpuhpd_names cpuhpd_engine)
