module github.com/ccm-project/ccm/build/codeshape

go 1.26.0
